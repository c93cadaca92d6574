package serve

import (
	"net/http"

	"github.com/grpo-dev/grpo/endpoints"
)

// streamKind is what an endpoint adds to the stream loop that chat and
// completions share: the shape of its events.
type streamKind interface {
	// piece is the event for what choice i generated since its last one:
	// delta is its new visible text and o.Tokens[from:] its new tokens. It
	// returns false when there is nothing to send yet.
	piece(i int, o *output, delta string, from int) (event any, ok bool)
	// usage is the event that carries the token counts, sent last when the
	// client asked for it.
	usage(u *endpoints.Usage) any
}

// streamed is how much of a choice a stream has sent.
type streamed struct {
	text, tokens int
	finished     bool
}

// streamChoices sends a job's choices as they grow: after each
// notification an event per unfinished choice with news (text held back
// by hold bytes until the choice finishes), then, when the job ends, the
// usage event if asked and [DONE]. A failed job ends the stream with an
// error event; a client that went away ends it with nothing more.
func (s *Server) streamChoices(st *sse, r *http.Request, j *job, hold int, includeUsage bool, kind streamKind) {
	sent := make([]streamed, len(j.params))
	for {
		select {
		case <-j.notify:
		case <-r.Context().Done():
			return
		}
		outs, done, err := j.snapshot()
		if err != nil {
			if r.Context().Err() == nil {
				st.fail(genError(err))
				st.done()
			}
			return
		}
		for i := range outs {
			o := &outs[i]
			if sent[i].finished {
				continue
			}
			text := s.visible(o, hold)
			ev, ok := kind.piece(i, o, text[min(sent[i].text, len(text)):], sent[i].tokens)
			if !ok {
				continue
			}
			if st.send(ev) != nil {
				return
			}
			sent[i] = streamed{text: len(text), tokens: len(o.Tokens), finished: o.Finish != ""}
		}
		if done {
			pt, ct := usageOf(j.prompt, outs)
			countTokens(r, pt, ct)
			if includeUsage {
				st.send(kind.usage(&endpoints.Usage{PromptTokens: pt, CompletionTokens: ct, TotalTokens: pt + ct}))
			}
			st.done()
			return
		}
	}
}

// includeUsage reports whether a streamed request asked for the usage
// event.
func (f *samplingFields) includeUsage() bool {
	return f.StreamOptions != nil && f.StreamOptions.IncludeUsage
}
