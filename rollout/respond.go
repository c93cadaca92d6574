package rollout

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
)

// respondSafely calls Respond, turning a panic into an error so one
// faulty episode cannot end the run.
func respondSafely(ctx context.Context, ep env.Episode, text string) (reply []chat.Message, done bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v (at %s)", r, panicLine(debug.Stack()))
		}
	}()
	return ep.Respond(ctx, text)
}

// panicLine picks the first frame outside the runtime and the files that
// recover (this one, tools.go) from a
// stack trace, to say where a panic came from in one line.
func panicLine(stack []byte) string {
	lines := strings.Split(string(stack), "\n")
	for i := 0; i+1 < len(lines); i++ {
		f := strings.TrimSpace(lines[i+1])
		if strings.HasPrefix(lines[i], "panic(") || strings.Contains(f, "/runtime/") || strings.Contains(f, "rollout/respond.go") || strings.Contains(f, "rollout/tools.go") || !strings.Contains(f, ".go:") {
			continue
		}
		if j := strings.LastIndex(f, " +0x"); j > 0 {
			f = f[:j]
		}
		return f
	}
	return "unknown location"
}
