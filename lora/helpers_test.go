package lora

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/model"
)

// root is the repository root, from the package directory.
const root = ".."

func loadModel(t testing.TB, name string) *model.Model {
	t.Helper()
	m, err := model.Load(filepath.Join(root, "testdata", "models", name), cpu.New())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// oursConfig and oursSeed define the adapter committed under
// testdata/lora/ours, which peft_check.py reads.
var oursConfig = Config{Rank: 4, Alpha: 8, TargetModules: AllModules}

const oursSeed = 7

// newOursAdapter is New's adapter with B filled from a fixed stream so the
// adapter moves the logits (PEFT's B = 0 would leave them unchanged).
func newOursAdapter(t testing.TB, m *model.Model) *Adapter {
	t.Helper()
	a, err := New(m, oursConfig, oursSeed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(99, 1))
	for _, p := range a.Params() {
		if p.Shape[1] == a.Config.Rank { // B is out × rank
			v := make([]float32, p.Value.Len())
			for i := range v {
				v[i] = float32((2*rng.Float64() - 1) * 0.1)
			}
			m.Backend.Upload(p.Value, v)
		}
	}
	return a
}

// golden is one reference logits file written by peft_check.py.
type golden struct {
	Model     string  `json:"model"`
	Adapter   string  `json:"adapter"`
	Tokens    []int32 `json:"tokens"`
	Shape     []int   `json:"shape"`
	Data      string  `json:"data"`
	BaseDelta float64 `json:"max_abs_logit_change_from_base"`
	logits    []float32
}

func readGolden(t testing.TB, name string) *golden {
	t.Helper()
	dir := filepath.Join(root, "testdata", "lora")
	raw, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, g.Data))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 4*g.Shape[0]*g.Shape[1] {
		t.Fatalf("%s: %d bytes for shape %v", g.Data, len(b), g.Shape)
	}
	g.logits = make([]float32, len(b)/4)
	for i := range g.logits {
		g.logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return &g
}

// logits runs m over tokens (one sequence) and returns every position's
// logits.
func logits(t testing.TB, m *model.Model, tokens []int32) []float32 {
	t.Helper()
	cache := m.NewKVCache(1, len(tokens))
	defer cache.Free()
	var b model.Batch
	b.Add(0, 0, tokens...)
	out, err := m.Logits(cache, &b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func download(be kernels.Backend, b kernels.Buffer) []float32 {
	v := make([]float32, b.Len())
	be.Download(v, b)
	return v
}

// sameParams fails unless b's parameters are a's: the same names and
// shapes, in the same order, with bit-identical values (a save/load round
// trip).
func sameParams(t testing.TB, be kernels.Backend, a, b *Adapter) {
	t.Helper()
	pa, pb := a.Params(), b.Params()
	if len(pa) != len(pb) {
		t.Fatalf("%d params saved, %d loaded", len(pa), len(pb))
	}
	for i := range pa {
		if pa[i].Name != pb[i].Name || pa[i].Shape != pb[i].Shape {
			t.Fatalf("param %d: %s %v vs %s %v", i, pa[i].Name, pa[i].Shape, pb[i].Name, pb[i].Shape)
		}
		va, vb := download(be, pa[i].Value), download(be, pb[i].Value)
		for j := range va {
			if math.Float32bits(va[j]) != math.Float32bits(vb[j]) {
				t.Fatalf("%s[%d]: %v saved, %v loaded", pa[i].Name, j, va[j], vb[j])
			}
		}
	}
}
