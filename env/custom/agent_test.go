package custom

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/env/internal/envtest"
)

// An [agent] table makes the environment an agent program's: its
// command runs in the environment's directory with the table's
// variables, max_turns is allowed without tools (10 when unset), and a
// reply keeps a tool result's room.
func TestCustomAgentProgram(t *testing.T) {
	dir := capitalsDir(t)
	envtest.WriteFile(t, dir, "environment.toml", "max_turns = 4\n"+capitalsTOML+`
[agent]
command = ["python3", "agent.py", "--fast"]
timeout = "90s"
env = { B = "2", A = "1" }
`)
	spec, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := spec.New(env.Args{"num_train_examples": -1, "num_eval_examples": -1, "system_prompt": ""}, env.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ag, ok := e.(env.AgentProgram)
	if !ok {
		t.Fatalf("%T is not an env.AgentProgram", e)
	}
	want := env.AgentSpec{Command: []string{"python3", "agent.py", "--fast"}, Dir: dir, Env: []string{"A=1", "B=2"},
		Timeout: 90 * time.Second, PromptTokens: defaultAgentPromptTokens}
	if got := ag.Agent(); !reflect.DeepEqual(got, want) {
		t.Errorf("agent spec %+v, want %+v", got, want)
	}
	if tl := e.(env.TurnLimiter); tl.MaxTurns() != 4 {
		t.Errorf("max_turns %d, want 4", tl.MaxTurns())
	}
	if rs := e.(env.ReplySizer); rs.ReplyTokens() != env.ToolReplyTokens {
		t.Errorf("reply tokens %d, want %d", rs.ReplyTokens(), env.ToolReplyTokens)
	}

	envtest.WriteFile(t, dir, "environment.toml", capitalsTOML+"\n[agent]\ncommand = [\"./agent\"]\n")
	spec, err = LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, _ = spec.New(env.Args{"num_train_examples": -1, "num_eval_examples": -1, "system_prompt": ""}, env.Options{})
	if got := e.(env.AgentProgram).Agent(); got.Timeout != defaultAgentTimeout || e.(env.TurnLimiter).MaxTurns() != defaultAgentTurns {
		t.Errorf("defaults: timeout %v, max_turns %d", got.Timeout, e.(env.TurnLimiter).MaxTurns())
	}
	plain, err := LoadDir(capitalsDir(t))
	if err != nil {
		t.Fatal(err)
	}
	e, _ = plain.New(env.Args{"num_train_examples": -1, "num_eval_examples": -1, "system_prompt": ""}, env.Options{})
	if _, ok := e.(env.AgentProgram); ok {
		t.Error("an environment without [agent] is an agent program's")
	}
}

func TestCustomAgentErrors(t *testing.T) {
	for table, want := range map[string]string{
		"[agent]\ncommand = []\n":                                                                        "[agent] needs command",
		"[agent]\ncommand = [\"a\"]\ntimeout = \"soon\"\n":                                               `timeout "soon" is not a positive duration`,
		"[agent]\ncommand = [\"a\"]\nprompt_tokens = -1\n":                                               "prompt_tokens = -1",
		"[agent]\ncommand = [\"a\"]\nshell = true\n":                                                     "unknown key",
		"[agent]\ncommand = [\"a\"]\n\n[[tool]]\nname = \"t\"\ndescription = \"d\"\ncommand = [\"t\"]\n": "[agent] and [[tool]] cannot be combined",
	} {
		dir := capitalsDir(t)
		envtest.WriteFile(t, dir, "environment.toml", capitalsTOML+"\n"+table)
		if _, err := LoadDir(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one naming %q", table, err, want)
		}
	}
}
