package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/grpo-dev/grpo/config"
	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/internal/tinymodel"
	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/model"
	"github.com/grpo-dev/grpo/rollout"
	"github.com/grpo-dev/grpo/sampler"
	"github.com/grpo-dev/grpo/tokenizer"
)

func evalFixture(t *testing.T) (*model.Model, *tokenizer.Tokenizer, env.Environment, string) {
	t.Helper()
	dir := t.TempDir()
	mdir, edir := filepath.Join(dir, "model"), filepath.Join(dir, "env")
	if err := tinymodel.Write(mdir, filepath.Join("..", "testdata", "models", "qwen3-tiny")); err != nil {
		t.Fatal(err)
	}
	if err := tinymodel.WriteReverseEnv(edir, 5); err != nil {
		t.Fatal(err)
	}
	be, err := kernels.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.Load(mdir, be)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Load(mdir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := env.New(edir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m, tok, e, mdir
}

// TestRunInPasses: one pass of a batched Run reproduces the unbatched Run
// exactly; several passes give metrics that match a recount from the rows,
// and progress reaches the total without going back.
func TestRunInPasses(t *testing.T) {
	m, tok, e, _ := evalFixture(t)
	p := sampler.DefaultParams()
	p.MaxTokens = 6
	const k = 3
	o := Options{NumExamples: -1, RolloutsPerExample: k, Sampling: p, Seed: 11}
	direct, err := Run(context.Background(), rollout.LocalEngine{Model: m, Tok: tok}, e, "rev", o)
	if err != nil {
		t.Fatal(err)
	}
	o.Batch = 1000
	one, err := runKept(m, tok, e, "rev", o)
	if err != nil {
		t.Fatal(err)
	}
	if one.Reward != direct.Reward || one.PassAt1 != direct.PassAt1 || one.PassAtK != direct.PassAtK || one.Rollouts != 15 || one.Examples != 5 {
		t.Errorf("one pass %+v\nunbatched %+v", one, direct)
	}
	for i := range direct.Trajectories {
		if !reflect.DeepEqual(one.Trajectories[i].Tokens, direct.Trajectories[i].Tokens) {
			t.Fatalf("rollout %d differs from the unbatched Run's", i)
		}
	}

	// Passes of 2 examples (6 rollouts); the threshold is the smallest
	// positive reward, so that pass@1 and pass@k are neither 0 nor 1 (the
	// random model rarely earns anything).
	o.Batch = 7
	probe, err := runKept(m, tok, e, "rev", o)
	if err != nil {
		t.Fatal(err)
	}
	o.PassThreshold = math.Inf(1)
	for _, tr := range probe.Trajectories {
		if tr.Reward > 0 {
			o.PassThreshold = min(o.PassThreshold, tr.Reward)
		}
	}
	if math.IsInf(o.PassThreshold, 1) {
		t.Fatal("every reward is 0; the fixture cannot test pass@k")
	}
	var progress []int
	o.OnDone = func(d int) { progress = append(progress, d) }
	res, err := runKept(m, tok, e, "rev", o)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(progress); i++ {
		if progress[i] < progress[i-1] {
			t.Errorf("progress went back: %v", progress)
		}
	}
	if len(progress) == 0 || progress[len(progress)-1] != 15 {
		t.Errorf("progress %v, want it to end at 15", progress)
	}
	rows := res.Rows()
	var sum, pass1, passK float64
	for ex := range 5 {
		solved := 0
		for j := range k {
			r := rows[ex*k+j]
			if r.ExampleIndex != ex || r.Rollout != j || r.Env != "rev" {
				t.Fatalf("row %d is example %d rollout %d", ex*k+j, r.ExampleIndex, r.Rollout)
			}
			sum += r.Reward
			if r.Reward >= o.PassThreshold-1e-9 {
				solved++
			}
		}
		pass1 += float64(solved) / k
		if solved > 0 {
			passK++
		}
	}
	if math.Abs(res.Reward-sum/15) > 1e-12 || math.Abs(res.PassAt1-pass1/5) > 1e-12 || math.Abs(res.PassAtK-passK/5) > 1e-12 {
		t.Errorf("merged reward %v pass@1 %v pass@k %v; recount %v %v %v", res.Reward, res.PassAt1, res.PassAtK, sum/15, pass1/5, passK/5)
	}
	if res.PassAt1 == 0 || res.PassAtK == 0 || res.PassAt1 == 1 {
		t.Errorf("threshold %v did not split the rollouts: pass@1 %v pass@k %v", o.PassThreshold, res.PassAt1, res.PassAtK)
	}
	// The rows survive JSON: prompt, completion and answer of each rollout.
	var buf bytes.Buffer
	if err := WriteRows(&buf, rows); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&buf)
	for i := range rows {
		var back Row
		if err := dec.Decode(&back); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if back.Answer != res.Trajectories[i].Answer || len(back.Prompt) == 0 || back.Prompt[len(back.Prompt)-1].Content != res.Trajectories[i].Prompt[len(res.Trajectories[i].Prompt)-1].Content ||
			len(back.Completion) != len(res.Trajectories[i].Messages) || back.FinishReason == "" || back.Turns != 1 {
			t.Errorf("row %d round trip: %+v", i, back)
		}
	}
}

// TestRunSpecs checks ids before loading models and evaluates specs.
func TestRunSpecs(t *testing.T) {
	_, _, e, mdir := evalFixture(t)
	_ = e
	p := sampler.DefaultParams()
	p.MaxTokens = 4
	if _, err := RunSpecs(context.Background(), []config.EvalSpec{{Name: "x", ID: "no-such-env", Model: "/nonexistent"}}, SpecOptions{}); err == nil {
		t.Error("unknown env accepted")
	}
	specs := []config.EvalSpec{
		{Name: "a", ID: "reverse-text", Args: map[string]any{"num_eval_examples": 2, "dataset_name": "synthetic"}, Model: mdir, Device: "cpu", NumExamples: -1, RolloutsPerExample: 2, Sampling: p},
		{Name: "b", ID: "reverse-text", Args: map[string]any{"num_eval_examples": 3, "dataset_name": "synthetic"}, Model: mdir, Device: "cpu", NumExamples: 1, RolloutsPerExample: 1, Sampling: p},
	}
	var started []int
	res, err := RunSpecs(context.Background(), specs, SpecOptions{OnStart: func(s config.EvalSpec, total int) { started = append(started, total) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Rollouts != 4 || res[1].Rollouts != 1 || !reflect.DeepEqual(started, []int{4, 1}) {
		t.Errorf("results %+v started %v", res, started)
	}
	want := (res[0].Reward*4 + res[1].Reward) / 5
	if math.Abs(OverallReward(res)-want) > 1e-12 {
		t.Errorf("overall %v, want %v", OverallReward(res), want)
	}
	specs[0].Model = filepath.Join(t.TempDir(), "missing")
	if _, err := RunSpecs(context.Background(), specs[:1], SpecOptions{}); err == nil {
		t.Error("missing model accepted")
	}
}
