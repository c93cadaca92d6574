package serve

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

// Config describes a server.
type Config struct {
	// ModelName is the name requests use for the base model (vLLM's
	// --served-model-name; grpo serve defaults it to the MODEL argument).
	ModelName string
	// Slots is how many sequences run at once (the KV cache's slots); 0
	// means 64. MaxLen is a sequence's most tokens, prompt included; 0
	// means the model's context, at most 4096.
	Slots, MaxLen int
	// MaxQueue bounds the requests waiting for slots; beyond it a request
	// gets 429. 0 means 4 × Slots.
	MaxQueue int
	// Adapters are loaded at start: served name → PEFT adapter directory.
	Adapters map[string]string
	// AdapterTimeout bounds reading a load_lora_adapter request's files;
	// 0 means 60 s.
	AdapterTimeout time.Duration
	// Logf, if set, hears adapter loads, failed generations and a line per
	// request (requestLog).
	Logf func(format string, args ...any)
}

// Server is an OpenAI-compatible server over one model.
type Server struct {
	cfg      Config
	m        *model.Model
	tok      *tokenizer.Tokenizer
	stops    []int32
	sched    *Scheduler
	engine   Engine
	adapters adapters
	created  int64
	ids      atomic.Uint64
	// warnOnce logs that reasoning_effort changes nothing for this model,
	// at the first request that sets it.
	warnOnce sync.Once

	bodies            *budget       // bytes of big request bodies in flight
	adapterReaders    chan struct{} // a slot per adapter load reading files
	maxAdapterWeights int64
}

// New builds a server over m and tok; Run starts its scheduler.
func New(m *model.Model, tok *tokenizer.Tokenizer, cfg Config) (*Server, error) {
	if cfg.ModelName == "" {
		return nil, fmt.Errorf("serve: the base model needs a name")
	}
	if cfg.Slots == 0 {
		cfg.Slots = 64
	}
	ctxLen := m.Config.MaxPositions
	if cfg.MaxLen == 0 {
		cfg.MaxLen = 4096
		if ctxLen > 0 {
			cfg.MaxLen = min(cfg.MaxLen, ctxLen)
		}
	}
	if cfg.MaxQueue == 0 {
		cfg.MaxQueue = 4 * cfg.Slots
	}
	if cfg.AdapterTimeout == 0 {
		cfg.AdapterTimeout = defaultAdapterTimeout
	}
	switch {
	case cfg.Slots < 1:
		return nil, fmt.Errorf("serve: slots = %d (--slots): want at least 1", cfg.Slots)
	case cfg.MaxLen < 2:
		return nil, fmt.Errorf("serve: max_len = %d (--max-len): want at least 2 tokens (a prompt and one generated token)", cfg.MaxLen)
	case ctxLen > 0 && cfg.MaxLen > ctxLen:
		return nil, fmt.Errorf("serve: max_len = %d (--max-len) is beyond the model's context of %d tokens (max_position_embeddings); give at most %d", cfg.MaxLen, ctxLen, ctxLen)
	case cfg.MaxQueue < 0:
		return nil, fmt.Errorf("serve: max queue %d is negative", cfg.MaxQueue)
	case cfg.AdapterTimeout < 0:
		return nil, fmt.Errorf("serve: adapter timeout %v is negative", cfg.AdapterTimeout)
	}
	if err := checkCacheFits(m, cfg.Slots, cfg.MaxLen); err != nil {
		return nil, err
	}
	s, err := sampler.New(m, tok, sampler.Config{Slots: cfg.Slots, MaxLen: cfg.MaxLen})
	if err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	srv := &Server{cfg: cfg, m: m, tok: tok, stops: sampler.StopTokenIDs(tok), created: time.Now().Unix(),
		adapters: adapters{byName: map[string]*adapterRef{}}, bodies: newBudget(bigBodies),
		adapterReaders: make(chan struct{}, adapterReaders), maxAdapterWeights: maxAdapterWeights(m)}
	srv.sched = NewScheduler(s, cfg.MaxQueue)
	srv.engine = srv.sched
	for name, dir := range cfg.Adapters {
		if err := srv.checkAdapterName(name); err != nil {
			s.Close()
			return nil, fmt.Errorf("serve: adapter %q: %v", name, err)
		}
		files, err := srv.readAdapterFiles(context.Background(), dir)
		var a *adapterRef
		if err == nil {
			a, err = loadAdapter(m, name, files)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
		srv.adapters.byName[name] = a
	}
	return srv, nil
}

// Run runs the scheduler until ctx ends, then frees the KV cache.
func (s *Server) Run(ctx context.Context) error {
	defer s.sched.s.Close()
	return s.sched.Run(ctx)
}

// Stats are the scheduler's counts.
func (s *Server) Stats() Stats { return s.engine.Stats() }

func (s *Server) logf(format string, args ...any) {
	if s.cfg.Logf != nil {
		s.cfg.Logf(format, args...)
	}
}

// checkAdapterName judges a served adapter name: printable (it is echoed
// in responses and log lines), at most maxNameBytes, not the base model's.
func (s *Server) checkAdapterName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("an adapter needs a name")
	case len(name) > maxNameBytes:
		return fmt.Errorf("a name of %d bytes is too long; at most %d", len(name), maxNameBytes)
	case !printable(name):
		return fmt.Errorf("%q: want printable characters only (no control characters or invalid UTF-8)", name)
	case name == s.cfg.ModelName:
		return fmt.Errorf("%q is the base model's name", name)
	}
	return nil
}

// Handler routes the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/completions", s.handleCompletions)
	mux.HandleFunc("POST /v1/load_lora_adapter", s.handleLoadLoRA)
	mux.HandleFunc("POST /v1/unload_lora_adapter", s.handleUnloadLoRA)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", s.handleMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, message: fmt.Sprintf("%s %q is not an endpoint of grpo serve (it serves /v1/models, /v1/chat/completions, /v1/completions, /v1/load_lora_adapter, /v1/unload_lora_adapter)", r.Method, r.URL.Path)})
	})
	return s.requestLog(endsContext(mux))
}

// endsContext cancels each request's context when its handler returns,
// as net/http's server does, so what is tied to it (a big body's share of
// the budget: readBody) is released under any caller of Handler.
func endsContext(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

type modelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen int     `json:"max_model_len"`
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	base := modelCard{ID: s.cfg.ModelName, Object: "model", Created: s.created, OwnedBy: "grpo", Root: s.cfg.ModelName, MaxModelLen: s.cfg.MaxLen}
	cards := []modelCard{base}
	for _, n := range s.adapters.names() {
		parent := s.cfg.ModelName
		root := n
		if a, ok := s.adapters.get(n); ok {
			root = a.path
			a.release()
		}
		cards = append(cards, modelCard{ID: n, Object: "model", Created: s.created, OwnedBy: "grpo", Root: root, Parent: &parent, MaxModelLen: s.cfg.MaxLen})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": cards})
}

// resolveModel maps a request's model field to its adapter (nil for the
// base model), holding the adapter for the request.
func (s *Server) resolveModel(name string) (*adapterRef, *apiError) {
	if name == "" || name == s.cfg.ModelName {
		return nil, nil
	}
	if a, ok := s.adapters.get(name); ok {
		return a, nil
	}
	known := append([]string{s.cfg.ModelName}, s.adapters.names()...)
	return nil, &apiError{status: http.StatusNotFound, param: "model", message: fmt.Sprintf("the model %q does not exist; this server has %s", name, strings.Join(known, ", "))}
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	st := s.engine.Stats()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintf(w, "# HELP grpo_requests_running Requests holding sampler slots.\n# TYPE grpo_requests_running gauge\ngrpo_requests_running %d\n", st.Running)
	fmt.Fprintf(w, "# HELP grpo_requests_waiting Requests queued for slots.\n# TYPE grpo_requests_waiting gauge\ngrpo_requests_waiting %d\n", st.Waiting)
	fmt.Fprintf(w, "# HELP grpo_requests_total Requests that left the scheduler, by outcome.\n# TYPE grpo_requests_total counter\n")
	fmt.Fprintf(w, "grpo_requests_total{outcome=\"finished\"} %d\ngrpo_requests_total{outcome=\"cancelled\"} %d\ngrpo_requests_total{outcome=\"failed\"} %d\n", st.Finished, st.Cancelled, st.Failed)
	fmt.Fprintf(w, "# HELP grpo_generation_tokens_total Tokens sampled.\n# TYPE grpo_generation_tokens_total counter\ngrpo_generation_tokens_total %d\n", st.GeneratedTokens)
	fmt.Fprintf(w, "# HELP grpo_decode_steps_total Forward calls of the scheduler.\n# TYPE grpo_decode_steps_total counter\ngrpo_decode_steps_total %d\n", st.Steps)
}

// newID is a response id with the API's prefix.
func (s *Server) newID(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, s.created, s.ids.Add(1))
}
