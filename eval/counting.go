package eval

import (
	"context"
	"io"
	"sync"

	"github.com/grpo-dev/grpo/chat"
	"github.com/grpo-dev/grpo/env"
)

// countingEnv reports each episode of e that ends, for a pass's progress.
type countingEnv struct {
	env.Environment
	done func()
}

func (w *countingEnv) NewEpisode(ex env.Example) env.Episode {
	return &countedEpisode{Episode: w.Environment.NewEpisode(ex), done: w.done}
}

// MaxTurns forwards env.TurnLimiter (1 when e has none: what the cache
// sizing assumes then anyway).
func (w *countingEnv) MaxTurns() int {
	if tl, ok := w.Environment.(env.TurnLimiter); ok {
		return tl.MaxTurns()
	}
	return 1
}

// ReplyTokens forwards env.ReplySizer (0: the default budget).
func (w *countingEnv) ReplyTokens() int {
	if rs, ok := w.Environment.(env.ReplySizer); ok {
		return rs.ReplyTokens()
	}
	return 0
}

// Tools forwards env.ToolEnvironment, so a tool environment keeps its
// tools when evaluated in windows.
func (w *countingEnv) Tools() []env.Tool { return env.ToolsOf(w.Environment) }

type countedEpisode struct {
	env.Episode
	done func()
	once sync.Once
}

// Tools forwards env.ToolEpisode (nil: the environment's tools).
func (c *countedEpisode) Tools() []env.Tool {
	if te, ok := c.Episode.(env.ToolEpisode); ok {
		return te.Tools()
	}
	return nil
}

// Close forwards io.Closer, so an episode's resources are released.
func (c *countedEpisode) Close() error {
	if cl, ok := c.Episode.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

func (c *countedEpisode) Respond(ctx context.Context, assistant string) ([]chat.Message, bool, error) {
	reply, done, err := c.Episode.Respond(ctx, assistant)
	if done || err != nil {
		c.once.Do(c.done)
	}
	return reply, done, err
}
