package pyenv

import (
	"maps"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/pybridge"
)

// pythonAgentEnv is a v1 taskset whose harness runs an agent program:
// rollout runs the bridge in harness mode once per rollout
// (Bridge.HarnessCommand), which launches the harness's program with
// grpo's interception endpoint as its model, and the program's calls are
// the rollout's turns; the taskset scores the conversation as for any v1
// taskset.
type pythonAgentEnv struct{ *pythonEnv }

// agentPromptTokens is the room a cache slot keeps for the program's
// first call, as a custom [agent] environment's default.
const agentPromptTokens = 1024

// exampleIDKey carries an agent rollout's task to the scoring request in
// its Info: its rubric sees the program's conversation, not the row.
const exampleIDKey = "grpo_example_id"

func (e pythonAgentEnv) Agent() env.AgentSpec {
	return env.AgentSpec{Command: e.b.HarnessCommand(), PromptTokens: agentPromptTokens}
}

// Examples are the taskset's, each naming its task in its Info.
func (e pythonAgentEnv) Examples(split string) ([]env.Example, error) {
	exs, err := e.pythonEnv.Examples(split)
	for i := range exs {
		info := maps.Clone(exs[i].Info)
		if info == nil {
			info = map[string]any{}
		}
		info[exampleIDKey] = e.rowOf(exs[i].ID).ExampleID
		exs[i].Info = info
	}
	return exs, err
}

func (e *pythonEnv) rowOf(id string) pybridge.Row {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rows[id]
}

// asEnvironment is e as the registry hands it out: an agent environment
// when its harness runs a program.
func asEnvironment(e *pythonEnv, err error) (env.Environment, error) {
	if err != nil {
		return nil, err
	}
	if e.b.Hello().Agent {
		return pythonAgentEnv{e}, nil
	}
	return e, nil
}

// MaxTurns caps an agent rollout's model calls: the harness's own cap
// where the taskset's Env names one, else 10, as a custom [agent]
// environment's.
func (e pythonAgentEnv) MaxTurns() int {
	if n := e.b.Hello().MaxTurns; n > 0 {
		return n
	}
	return 10
}
