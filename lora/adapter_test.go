package lora

import (
	"math"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/model"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.Rank = 0 }, "lora.rank = 0"},
		{func(c *Config) { c.Alpha = 0 }, "lora.alpha = 0"},
		{func(c *Config) { c.Alpha = math.NaN() }, "lora.alpha = NaN"},
		{func(c *Config) { c.TargetModules = nil }, "lora.target_modules is empty"},
		{func(c *Config) { c.TargetModules = []string{"q_proj", "lm_head"} }, `unknown target module "lm_head"`},
		{func(c *Config) { c.TargetModules = []string{"q_proj", "q_proj"} }, `lists "q_proj" twice`},
		{func(c *Config) { c.Dropout = 0.05 }, "dropout > 0 is not supported yet"},
		{func(c *Config) { c.Dropout = 1 }, "must be in [0, 1)"},
		{func(c *Config) { c.Dropout = -0.1 }, "must be in [0, 1)"},
	} {
		cfg := DefaultConfig()
		c.mod(&cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("got %v, want one line containing %q", err, c.want)
		}
	}
}

func TestScale(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want float64
	}{
		{Config{Rank: 16, Alpha: 32}, 2},
		{Config{Rank: 8, Alpha: 8}, 1},
		{Config{Rank: 16, Alpha: 32, UseRSLoRA: true}, 8},
		{Config{Rank: 8, Alpha: 16, UseRSLoRA: true}, 16 / math.Sqrt(8)},
	} {
		if got := c.cfg.Scale(); got != float32(c.want) {
			t.Errorf("%+v: Scale() = %v, want %v", c.cfg, got, c.want)
		}
	}
}

// TestNewInit checks PEFT's initialisation: A within ±1/√in and spread like
// U(−b, b) (mean 0, variance b²/3), B exactly zero, gradients zero, shapes
// and names as PEFT's, and the same seed giving the same values.
func TestNewInit(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	a, err := New(m, DefaultConfig(), 42)
	if err != nil {
		t.Fatal(err)
	}
	params := a.Params()
	if len(params) != 2*7*m.Config.NumLayers {
		t.Fatalf("%d params", len(params))
	}
	if params[0].Name != "base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight" ||
		params[len(params)-1].Name != "base_model.model.model.layers.1.mlp.down_proj.lora_B.weight" {
		t.Fatalf("names: %s … %s", params[0].Name, params[len(params)-1].Name)
	}
	n := 0
	for _, p := range params {
		in, out := m.Config.Dims(p.Proj)
		v := download(m.Backend, p.Value)
		if g := download(m.Backend, p.Grad); maxAbsDiff(g, make([]float32, len(g))) != 0 {
			t.Errorf("%s: gradient not zero", p.Name)
		}
		n += len(v)
		if strings.Contains(p.Name, "lora_B") {
			if p.Shape != [2]int{out, 16} || maxAbsDiff(v, make([]float32, len(v))) != 0 {
				t.Errorf("%s: shape %v, B must be zero", p.Name, p.Shape)
			}
			continue
		}
		if p.Shape != [2]int{16, in} {
			t.Errorf("%s: shape %v, want [16 %d]", p.Name, p.Shape, in)
		}
		bound := 1 / math.Sqrt(float64(in))
		var sum, sq float64
		for _, x := range v {
			if math.Abs(float64(x)) > bound {
				t.Fatalf("%s: %v outside ±%v", p.Name, x, bound)
			}
			sum += float64(x)
			sq += float64(x) * float64(x)
		}
		k := float64(len(v))
		mean, variance := sum/k, sq/k-(sum/k)*(sum/k)
		// 1024–2048 draws: mean within ~5σ/√k, variance within 15%.
		if math.Abs(mean) > 5*bound/math.Sqrt(3*k) || math.Abs(variance/(bound*bound/3)-1) > 0.15 {
			t.Errorf("%s: mean %v, variance %v; want 0 and %v", p.Name, mean, variance, bound*bound/3)
		}
	}
	if n != a.NumParams() {
		t.Errorf("NumParams %d, counted %d", a.NumParams(), n)
	}
	// Rank 16 on every projection of 2 layers of qwen3-tiny:
	// hidden 64, q 4·32 = 128, k/v 2·32 = 64, intermediate 128.
	if want := 2 * 16 * (64 + 128 + 2*(64+64) + 128 + 64 + 2*(64+128) + 128 + 64); a.NumParams() != want {
		t.Errorf("NumParams %d, want %d", a.NumParams(), want)
	}
	b, _ := New(m, DefaultConfig(), 42)
	c, _ := New(m, DefaultConfig(), 43)
	pa, pb, pc := download(m.Backend, params[0].Value), download(m.Backend, b.Params()[0].Value), download(m.Backend, c.Params()[0].Value)
	if maxAbsDiff(pa, pb) != 0 || maxAbsDiff(pa, pc) == 0 {
		t.Error("same seed must give the same A, another seed another A")
	}
	// Streams are per tensor: a smaller target set keeps q_proj's values.
	q, _ := New(m, Config{Rank: 16, Alpha: 32, TargetModules: []string{"q_proj"}}, 42)
	if maxAbsDiff(download(m.Backend, q.Params()[0].Value), pa) != 0 {
		t.Error("q_proj's A depends on the other target modules")
	}
	if _, err := New(m, Config{Rank: 0, Alpha: 1, TargetModules: AllModules}, 1); err == nil {
		t.Error("New accepted rank 0")
	}
}

// TestFreshAdapterIsIdentity: B = 0 leaves the logits those of the base
// model, and WithAdapter(nil) is the base model.
func TestFreshAdapterIsIdentity(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	tokens := []int32{1, 17, 300, 5, 99, 511, 2}
	base := logits(t, m, tokens)
	a, _ := New(m, DefaultConfig(), 1)
	if d := maxAbsDiff(logits(t, m.WithAdapter(a), tokens), base); d > 1e-6 {
		t.Errorf("fresh adapter moved logits by %g", d)
	}
	withOurs := m.WithAdapter(newOursAdapter(t, m))
	if d := maxAbsDiff(logits(t, withOurs, tokens), base); d < 0.01 {
		t.Errorf("non-zero B moved logits by only %g", d)
	}
	if d := maxAbsDiff(logits(t, withOurs.WithAdapter(nil), tokens), base); d != 0 {
		t.Errorf("WithAdapter(nil) differs from the base model by %g", d)
	}
}

func TestZeroGradAndLoRA(t *testing.T) {
	m := loadModel(t, "qwen3-tiny")
	a, _ := New(m, Config{Rank: 2, Alpha: 4, TargetModules: []string{"v_proj"}}, 1)
	for _, p := range a.Params() {
		v := make([]float32, p.Grad.Len())
		for i := range v {
			v[i] = 1
		}
		m.Backend.Upload(p.Grad, v)
	}
	a.ZeroGrad()
	for _, p := range a.Params() {
		if g := download(m.Backend, p.Grad); maxAbsDiff(g, make([]float32, len(g))) != 0 {
			t.Fatalf("%s: ZeroGrad left non-zero values", p.Name)
		}
	}
	if a.LoRA(0, model.ProjQ) != nil || a.LoRA(0, model.ProjV) == nil || a.LoRA(5, model.ProjV) != nil || a.LoRA(-1, model.ProjV) != nil {
		t.Error("LoRA must return the pair only where one exists")
	}
	if l := a.LoRA(1, model.ProjV); l.Rank != 2 || l.Scale != 2 {
		t.Errorf("rank %d scale %v", l.Rank, l.Scale)
	}
}
