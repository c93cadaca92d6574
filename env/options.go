package env

import (
	"github.com/grpo-dev/grpo/env/pybridge"
	"github.com/grpo-dev/grpo/model/hub"
)

// Options are the settings an environment is built with, passed to
// New and Lookup rather than kept in package variables, so that two
// callers (or two tests) can use different ones. The zero value is what
// a run uses.
type Options struct {
	// Hub is how dataset downloads reach Hugging Face; the zero value
	// reads HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, HF_HUB_OFFLINE… as
	// huggingface_hub does. Tests point it at a fake hub.
	Hub hub.Options
	// Python tunes the bridge of each Python (verifiers) environment:
	// the interpreter, timeouts, crash budget and where the child's
	// stderr goes. The zero value uses $GRPO_PYTHON or python3 and logs
	// to stderr.
	Python pybridge.Options
	// Version is the behaviour to build (a Spec.Versions name). New sets
	// it to the canonical name of the one a config selected, or the
	// default, before calling Spec.New.
	Version string
}

// Option sets one field of Options.
type Option func(*Options)

// WithHub sets the hub settings of dataset downloads.
func WithHub(o hub.Options) Option { return func(x *Options) { x.Hub = o } }

// WithPython sets the bridge settings of Python environments.
func WithPython(o pybridge.Options) Option { return func(x *Options) { x.Python = o } }

// Apply returns the Options that opts set, starting from the zero value.
func Apply(opts ...Option) Options {
	var o Options
	for _, f := range opts {
		f(&o)
	}
	return o
}
