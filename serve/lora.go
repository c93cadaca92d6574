package serve

import (
	"context"
	"fmt"
	"net/http"

	"github.com/grpo-dev/grpo/model"
)

// loraRequest is vLLM's load/unload_lora_adapter body.
type loraRequest struct {
	Name string `json:"lora_name"`
	Path string `json:"lora_path"`
	// LoadInplace replaces an adapter of the same name (vLLM's flag for
	// a trainer that reloads an adapter each step under one name).
	LoadInplace bool `json:"load_inplace"`
}

// handleLoadLoRA loads a PEFT adapter between two steps of the scheduler
// and serves it under lora_name; it answers vLLM's plain-text success.
func (s *Server) handleLoadLoRA(w http.ResponseWriter, r *http.Request) {
	var req loraRequest
	if e := decode(r.Body, &req); e != nil {
		writeError(w, e)
		return
	}
	switch {
	case req.Name == "" || req.Path == "":
		writeError(w, badRequest("lora_name", "both lora_name and lora_path are required"))
		return
	case req.Name == s.cfg.ModelName:
		writeError(w, badRequest("lora_name", "lora_name %q is the base model's name", req.Name))
		return
	}
	if a, ok := s.adapters.get(req.Name); ok {
		a.release()
		if !req.LoadInplace {
			writeError(w, badRequest("lora_name", "the adapter %q is already loaded; unload it first or pass load_inplace", req.Name))
			return
		}
	}
	var ref *adapterRef
	err := s.engine.do(r.Context(), func(m *model.Model) error {
		var err error
		ref, err = loadAdapter(m, req.Name, req.Path)
		return err
	})
	if err != nil {
		writeError(w, badRequest("lora_path", "%v", err))
		return
	}
	if err := s.adapters.put(ref, req.LoadInplace); err != nil {
		ref.unload()
		writeError(w, badRequest("lora_name", "%v", err))
		return
	}
	s.logf("loaded adapter %s from %s", req.Name, req.Path)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
}

// handleUnloadLoRA stops serving an adapter; requests already using it
// finish with it, and its weights are freed after the last one.
func (s *Server) handleUnloadLoRA(w http.ResponseWriter, r *http.Request) {
	var req loraRequest
	if e := decode(r.Body, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Name == "" {
		writeError(w, badRequest("lora_name", "lora_name is required"))
		return
	}
	// Freed on the scheduler goroutine, where the backend is used.
	err := s.engine.do(context.WithoutCancel(r.Context()), func(*model.Model) error { return s.adapters.remove(req.Name) })
	if err != nil {
		writeError(w, &apiError{status: http.StatusNotFound, param: "lora_name", message: err.Error()})
		return
	}
	s.logf("unloaded adapter %s", req.Name)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", req.Name)
}
