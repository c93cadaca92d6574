package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/grpo-dev/grpo/loader"
)

// Replicas serves one model from several devices (grpo serve --devices):
// a Server (model, adapters, scheduler and sampler) per device behind one
// handler. A generation request goes to the replica with the fewest
// requests in flight (ties to the one after the last chosen): requests
// differ by orders of magnitude in cost (max_tokens, n, prompt length),
// so round robin would queue new requests behind a replica's long ones
// while another idles. Adapter loads and unloads go to every replica, so
// each serves every adapter and /v1/models (replica 0's) is the truth for
// all; /health and /metrics are replica 0's too.
type Replicas struct {
	servers  []*Server
	handlers []http.Handler
	inflight []atomic.Int64
	served   []atomic.Int64
	mu       sync.Mutex // orders picks and adapter changes
	last     int
}

// AdapterNames are the adapters served (replica 0's, which every replica
// holds), sorted.
func (r *Replicas) AdapterNames() []string { return r.servers[0].adapters.names() }

// OpenReplicas builds a server with cfg on each device, its model (and
// tokenizer) opened by open from spec on that device, and serves them as
// one; a replica that cannot be built is named by its device.
func OpenReplicas(devices []string, spec loader.Spec, open func(loader.Spec) (*loader.Loaded, error), cfg Config) (*Replicas, error) {
	var servers []*Server
	for _, device := range devices {
		spec.Device = device
		l, err := open(spec)
		if err != nil {
			return nil, err
		}
		s, err := New(l.Model, l.Tokenizer, cfg)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", device, err)
		}
		servers = append(servers, s)
	}
	return NewReplicas(servers), nil
}

// NewReplicas serves servers, one per device, as one server; they must
// serve the same model under the same name with the same adapters.
func NewReplicas(servers []*Server) *Replicas {
	r := &Replicas{servers: servers, inflight: make([]atomic.Int64, len(servers)), served: make([]atomic.Int64, len(servers)), last: -1}
	for _, s := range servers {
		r.handlers = append(r.handlers, s.Handler())
	}
	return r
}

// Run runs every replica's scheduler until ctx ends or one fails, which
// stops the others.
func (r *Replicas) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(r.servers))
	var wg sync.WaitGroup
	for i, s := range r.servers {
		wg.Go(func() {
			errs[i] = s.Run(ctx)
			cancel()
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Served counts the generation requests each replica was given.
func (r *Replicas) Served() []int64 {
	out := make([]int64, len(r.served))
	for i := range r.served {
		out[i] = r.served[i].Load()
	}
	return out
}

// Handler is the replicas' OpenAI API (one replica's own, when alone).
func (r *Replicas) Handler() http.Handler {
	if len(r.handlers) == 1 {
		return r.handlers[0]
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", r.generate)
	mux.HandleFunc("POST /v1/completions", r.generate)
	mux.HandleFunc("POST /v1/load_lora_adapter", r.everyReplica)
	mux.HandleFunc("POST /v1/unload_lora_adapter", r.everyReplica)
	mux.Handle("/", r.handlers[0])
	return mux
}

// generate serves a completion on the least-loaded replica.
func (r *Replicas) generate(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	pick := -1
	for k := range r.servers {
		i := (r.last + 1 + k) % len(r.servers)
		if pick < 0 || r.inflight[i].Load() < r.inflight[pick].Load() {
			pick = i
		}
	}
	r.last = pick
	r.inflight[pick].Add(1)
	r.mu.Unlock()
	defer r.inflight[pick].Add(-1)
	r.served[pick].Add(1)
	r.handlers[pick].ServeHTTP(w, req)
}

// everyReplica plays an adapter load or unload on each replica in turn
// and answers with the first failure, else replica 0's answer. A change
// that fails on a later replica after succeeding on earlier ones leaves
// them differing; the failure says which.
func (r *Replicas) everyReplica(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		writeError(w, tooLarge())
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var first *recorder
	for i, h := range r.handlers {
		rec := &recorder{header: http.Header{}, status: http.StatusOK}
		sub := req.Clone(req.Context())
		sub.Body, sub.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		h.ServeHTTP(rec, sub)
		if first == nil {
			first = rec
		}
		if rec.status >= 300 {
			if i > 0 {
				r.servers[0].logf("adapter change failed on replica %d of %d after succeeding on the ones before: the replicas differ until it is retried", i, len(r.handlers))
			}
			first = rec
			break
		}
	}
	for k, v := range first.header {
		w.Header()[k] = v
	}
	w.WriteHeader(first.status)
	w.Write(first.body.Bytes())
}

// recorder holds a replica's answer to a request played on every replica.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (c *recorder) Header() http.Header         { return c.header }
func (c *recorder) Write(p []byte) (int, error) { return c.body.Write(p) }
func (c *recorder) WriteHeader(status int)      { c.status = status }
