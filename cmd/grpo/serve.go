package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/loader"
	"github.com/grpo-dev/grpo/serve"
)

// adapterFlags collects repeated --adapter NAME=DIR.
type adapterFlags map[string]string

func (a adapterFlags) String() string { return "" }

func (a adapterFlags) Set(s string) error {
	name, dir, ok := strings.Cut(s, "=")
	if !ok || name == "" || dir == "" {
		return fmt.Errorf("%q: want NAME=DIR, e.g. --adapter rt=runs/RUN/adapter", s)
	}
	if _, dup := a[name]; dup {
		return fmt.Errorf("adapter name %q is given twice", name)
	}
	a[name] = dir
	return nil
}

type serveOptions struct {
	host, name, device string
	devices            string // --devices: a replica per device, requests to the least loaded (serve.Replicas)
	port               int
	slots, maxLen      int
	maxQueue           int
	adapters           adapterFlags
}

var serveFlags serveOptions

func init() {
	register(&command{
		name:    "serve",
		summary: "serve a model (and LoRA adapters) over an OpenAI-compatible HTTP API, as vLLM does",
		usage:   "MODEL [--adapter NAME=DIR ...] [--host H] [--port P] [--slots N] [--max-len L]",
		help: `Serves MODEL (a directory or hub id) on http://HOST:PORT/v1 with the
OpenAI API that vLLM serves, so OpenAI clients, verifiers, prime-rl and
grpo's own endpoints.toml client can use it:

  GET  /v1/models                 the base model and each adapter (parent: the base)
  POST /v1/chat/completions       messages, tools (through the chat template), n,
                                  temperature, top_p, top_k, min_p, max_tokens, stop,
                                  seed, logprobs/top_logprobs, stream (SSE + [DONE]),
                                  stream_options.include_usage
  POST /v1/completions            prompt as text or token ids, logprobs, echo
  POST /v1/load_lora_adapter      {"lora_name": N, "lora_path": DIR, "load_inplace": b}
  POST /v1/unload_lora_adapter    {"lora_name": N}
  GET  /metrics, GET /health

vLLM's extras are accepted too: return_token_ids (prompt_token_ids and each
choice's token_ids, the stop token included), chat_template_kwargs (e.g.
{"enable_thinking": false}), ignore_eos, stop_token_ids. A request picks an
adapter by its model field: the base model's name (--served-model-name,
default MODEL) or an adapter's NAME. With tools, a finished turn is read by
the tool-call parser the chat template implies (Hermes <tool_call> for Qwen,
Llama 3's JSON), as vLLM's --tool-call-parser does: well-formed calls come
back as tool_calls with finish_reason "tool_calls" (streamed as one delta at
the end of the turn); otherwise the text is the content.

Requests are batched continuously over --slots KV-cache slots: a request
starts as soon as a slot is free. The model applies one adapter per forward
pass, so requests for different adapters take turns (first come, first
served; a batch drains before the adapter switches). Up to --max-queue
requests wait for slots; more get 429. A client that disconnects frees its
slots at the next step. Log-probs are the model's raw ones (temperature 1,
untruncated), what a GRPO trainer uses as behaviour log-probs; with a seed
each choice's tokens are the same whatever else is running.

Every request is checked against the server's limits before work is done
for it: n at most --slots; a text prompt that cannot fit in --max-len
tokens is refused from its length before it is tokenized; bodies up to
16 MiB; at most 64 stop strings of 1 KiB and 256 stop_token_ids. Adapter
files must be regular files (a FIFO or /dev/zero is refused), the weights
no larger than the config's rank allows for the model; they are read off
the generation loop with a 60 s timeout. --max-len beyond the model's
context, or slots whose KV cache exceeds free memory, are refused at
start. Each request logs one line to stderr: client, request line,
status, tokens, latency. --devices cuda:0-3 serves a replica per device.

Examples:
  grpo serve Qwen/Qwen3-0.6B --adapter rt=runs/reverse-1/adapter
  grpo serve ./qwen3 --port 8001 --slots 16 --max-len 2048
  curl localhost:8000/v1/chat/completions -d '{"model":"rt","messages":[{"role":"user","content":"hi"}]}'`,
		flags: func(fs *flag.FlagSet) {
			f := &serveFlags
			*f = serveOptions{adapters: adapterFlags{}}
			fs.Var(f.adapters, "adapter", "NAME=DIR: serve a PEFT LoRA adapter under NAME (repeatable)")
			fs.StringVar(&f.host, "host", "127.0.0.1", "address to listen on (0.0.0.0 for every interface)")
			fs.IntVar(&f.port, "port", 8000, "port to listen on (0 picks a free one and prints it)")
			fs.StringVar(&f.name, "served-model-name", "", "the base model's name in requests (default MODEL)")
			fs.IntVar(&f.slots, "slots", 64, "sequences generated at once (KV-cache slots)")
			fs.IntVar(&f.maxLen, "max-len", 0, "most tokens per sequence, prompt included (default the model's context, at most 4096)")
			fs.IntVar(&f.maxQueue, "max-queue", 0, "requests that may wait for a slot before 429 (default 4 × slots)")
			deviceFlag(fs, &f.device)
			devicesFlag(fs, &f.devices)
		},
		run: runServe,
	})
}

func runServe(args []string) error {
	f := &serveFlags
	switch {
	case len(args) != 1:
		return usagef("give one model, e.g. grpo serve Qwen/Qwen3-0.6B")
	case f.slots < 1:
		return usagef("--slots %d: want at least 1", f.slots)
	case f.maxLen < 0 || f.maxQueue < 0:
		return usagef("--max-len and --max-queue must not be negative")
	case f.port < 0 || f.port > 65535:
		return usagef("--port %d: want 0 to 65535", f.port)
	}
	devices, err := config.DeviceNames(f.device, f.devices) // several: a replica on each (serve.Replicas)
	if err != nil {
		return err
	}
	name := f.name
	if name == "" {
		name = args[0]
	}
	logf := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "grpo serve: "+format+"\n", a...) }
	srv, err := serve.OpenReplicas(devices, loader.Spec{Model: args[0]}, openModel, serve.Config{ModelName: name, Slots: f.slots, MaxLen: f.maxLen, MaxQueue: f.maxQueue, Adapters: f.adapters, Logf: logf})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(f.host, fmt.Sprint(f.port)))
	if err != nil {
		return fmt.Errorf("listening on %s:%d: %w", f.host, f.port, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sched := make(chan error, 1)
	go func() { sched <- srv.Run(ctx) }()
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 30 * time.Second}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	adapters := ""
	if names := srv.AdapterNames(); len(names) > 0 {
		adapters = " and adapters " + strings.Join(names, ", ")
	}
	fmt.Fprintf(stdout, "grpo serve: %s%s on http://%s/v1 (%d slots per device: %s)\n", name, adapters, ln.Addr(), f.slots, strings.Join(devices, ", "))
	select {
	case err := <-served:
		return err
	case err := <-sched:
		hs.Close()
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(shut)
		<-sched
		return nil
	}
}
