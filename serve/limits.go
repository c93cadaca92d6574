package serve

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/grpo-dev/grpo/estimate"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/sampler"
)

// Limits of one request, checked before anything is allocated for it.
// Stop strings and ids are matched at every sampled token, so their count
// and length bound the scheduler's work per step for everyone.
const (
	maxStops        = 64
	maxStopBytes    = 1024
	maxStopTokenIDs = 256
	maxNameBytes    = 256  // an adapter's served name
	maxPathBytes    = 4096 // an adapter's directory (PATH_MAX)
)

// printable reports whether name is valid UTF-8 of printable characters,
// so it cannot forge log lines or hide in a listing.
func printable(name string) bool {
	for _, r := range name {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// checkPromptText refuses a text prompt that cannot fit in maxLen tokens,
// judged from a lower bound on its token count (Tokenizer.MinTokens) before
// it is tokenized: encoding a 15 MB prompt only to refuse it would cost
// hundreds of MB.
func (s *Server) checkPromptText(text, param string) *apiError {
	maxLen := s.engine.MaxLen()
	if n := s.tok.MinTokens(text, maxLen); n >= maxLen {
		return badRequest(param, "the prompt (%d bytes) is at least %d tokens, and this server's max_model_len is %d (grpo serve --max-len): shorten it", len(text), n, maxLen)
	}
	return nil
}

// checkStops bounds the stop strings and stop token ids of a request.
func checkStops(stop []string, ids []int32, vocab int) *apiError {
	if len(stop) > maxStops {
		return badRequest("stop", "stop has %d strings; grpo serve takes at most %d", len(stop), maxStops)
	}
	for i, st := range stop {
		if len(st) > maxStopBytes {
			return badRequest("stop", "stop[%d] is %d bytes; grpo serve takes stop strings of at most %d", i, len(st), maxStopBytes)
		}
	}
	if len(ids) > maxStopTokenIDs {
		return badRequest("stop_token_ids", "stop_token_ids has %d ids; grpo serve takes at most %d", len(ids), maxStopTokenIDs)
	}
	for i, id := range ids {
		if id < 0 || int(id) >= vocab {
			return badRequest("stop_token_ids", "stop_token_ids[%d] = %d is outside the model's vocabulary of %d", i, id, vocab)
		}
	}
	return nil
}

// checkCacheFits refuses slots × maxLen whose KV cache alone exceeds the
// device's free memory, at start rather than by dying while allocating it.
// The cache is priced as sampler.New sizes it (sampler.KVBytes), windows
// included.
func checkCacheFits(m *model.Model, slots, maxLen int) error {
	free, known := int64(0), false
	if mr, ok := m.Backend.(kernels.MemoryReporter); ok && m.Backend.Describe().GPU {
		f, _, err := mr.MemInfo()
		free, known = f, err == nil
	} else if av, err := estimate.AvailableMemory("cpu"); err == nil && av.Known {
		free, known = av.Bytes, true
	}
	if !known {
		return nil
	}
	return cacheFits(m, slots, maxLen, free)
}

// cacheFits is checkCacheFits with free bytes free.
func cacheFits(m *model.Model, slots, maxLen int, free int64) error {
	// What sampler.New allocates: sliding-window layers keep only the
	// blocks their windows reach, in a pool of their own.
	need, err := sampler.KVBytes(m, sampler.Config{Slots: slots, MaxLen: maxLen})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if need > free {
		return fmt.Errorf("serve: %d slots (--slots) of %d tokens (--max-len) need %.3g GiB of KV cache, but the device has %.3g GiB free; lower --slots or --max-len",
			slots, maxLen, float64(need)/(1<<30), float64(free)/(1<<30))
	}
	return nil
}
