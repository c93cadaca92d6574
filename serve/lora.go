package serve

import (
	"context"
	"fmt"
	"net/http"
	"strings"

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

// handleLoadLoRA reads a PEFT adapter's files here, off the scheduler
// goroutine (capped and timed: readAdapterFiles), then builds and installs
// it between two steps of the scheduler and serves it under lora_name; it
// answers vLLM's plain-text success.
func (s *Server) handleLoadLoRA(w http.ResponseWriter, r *http.Request) {
	var req loraRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := s.checkLoRARequest(&req, true); e != nil {
		writeError(w, e)
		return
	}
	if a, ok := s.adapters.get(req.Name); ok {
		a.release()
		if !req.LoadInplace {
			writeError(w, badRequest("lora_name", "the adapter %q is already loaded; unload it first or pass load_inplace", req.Name))
			return
		}
	}
	files, err := s.readAdapterFiles(r.Context(), req.Path)
	if err != nil {
		writeError(w, badRequest("lora_path", "adapter %s: %v", req.Name, err))
		return
	}
	// Built and installed in one call, so an adapter whose client left
	// while it waited is served, not leaked.
	var taken error
	err = s.engine.do(r.Context(), func(m *model.Model) error {
		ref, err := loadAdapter(m, req.Name, files)
		if err != nil {
			return err
		}
		if taken = s.adapters.put(ref, req.LoadInplace); taken != nil {
			ref.unload()
			return taken
		}
		return nil
	})
	switch {
	case err != nil && err == taken:
		writeError(w, badRequest("lora_name", "%v", err))
		return
	case err != nil:
		writeError(w, badRequest("lora_path", "%v", err))
		return
	}
	s.logf("loaded adapter %s from %s", req.Name, req.Path)
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", req.Name)
}

// checkLoRARequest checks a load (or unload) request's fields before any
// file is touched.
func (s *Server) checkLoRARequest(req *loraRequest, load bool) *apiError {
	switch {
	case load && (req.Name == "" || req.Path == ""):
		return badRequest("lora_name", "both lora_name and lora_path are required")
	case req.Name == "":
		return badRequest("lora_name", "lora_name is required")
	}
	if err := s.checkAdapterName(req.Name); err != nil {
		return badRequest("lora_name", "lora_name: %v", err)
	}
	if len(req.Path) > maxPathBytes || strings.IndexByte(req.Path, 0) >= 0 {
		return badRequest("lora_path", "lora_path: want a directory path of at most %d bytes without NUL", maxPathBytes)
	}
	return nil
}

// handleUnloadLoRA stops serving an adapter; requests already using it
// finish with it, and its weights are freed after the last one.
func (s *Server) handleUnloadLoRA(w http.ResponseWriter, r *http.Request) {
	var req loraRequest
	if e := s.decodeBody(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if e := s.checkLoRARequest(&req, false); e != nil {
		writeError(w, e)
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
