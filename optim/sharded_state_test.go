package optim

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/inproc"
)

// TestSaveShardsIsSaveState: two ranks each holding a shared parameter
// and one of their own, their moments those of one optimizer over all
// three, save with SaveShards the very bytes SaveState saves of the one
// optimizer; that file restores each rank's (fresh) moments and step
// count bit for bit. Ranks at different steps, or two ranks saving the
// same parameter as their own, are refused.
func TestSaveShardsIsSaveState(t *testing.T) {
	sizes := []int{3, 4, 2}
	param := func(be kernels.Backend, i int) Param {
		return Param{Name: string(rune('a' + i)), Value: be.Alloc(kernels.F32, sizes[i]), Grad: be.Alloc(kernels.F32, sizes[i])}
	}
	// moments gives each moment buffer values of its own, by name.
	moments := func(o *AdamW) {
		for _, st := range o.State() {
			v := make([]float32, st.Value.Len())
			for j := range v {
				v[j] = float32(len(st.Name)*10+j) + float32(st.Name[0])/7
			}
			o.be.Upload(st.Value, v)
		}
		o.Step = 3
	}
	one := cpu.New()
	whole, _ := NewAdamW(one, []Param{param(one, 0), param(one, 1), param(one, 2)}, DefaultConfig())
	moments(whole)
	dir := t.TempDir()
	wantPath, gotPath := filepath.Join(dir, "whole.safetensors"), filepath.Join(dir, "shards.safetensors")
	if err := whole.SaveState(wantPath); err != nil {
		t.Fatal(err)
	}
	g, _ := inproc.NewGroup(2, time.Minute)
	ranks := make([]*AdamW, 2)
	fresh := make([]*AdamW, 2)
	for r := range 2 {
		be := cpu.New()
		coll, _ := g.Join(r, be)
		ranks[r], _ = NewAdamW(be, []Param{param(be, 0), param(be, 1+r)}, DefaultConfig())
		fresh[r], _ = NewAdamW(be, []Param{param(be, 0), param(be, 1+r)}, DefaultConfig())
		for _, o := range []*AdamW{ranks[r], fresh[r]} {
			if err := o.ShardAcross(coll, []bool{false, true}); err != nil {
				t.Fatal(err)
			}
		}
		moments(ranks[r])
	}
	if err := SaveShards(gotPath, ranks); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(wantPath)
	got, _ := os.ReadFile(gotPath)
	if !bytes.Equal(got, want) {
		t.Errorf("the shards' file (%d bytes) differs from one optimizer's (%d bytes)", len(got), len(want))
	}
	for r, o := range fresh {
		if err := o.LoadState(gotPath); err != nil {
			t.Fatal(err)
		}
		if o.Step != 3 {
			t.Errorf("rank %d restored step %d, want 3", r, o.Step)
		}
		for i, st := range o.State() {
			if w := download(ranks[r].be, ranks[r].State()[i].Value); !slices.Equal(download(o.be, st.Value), w) {
				t.Errorf("rank %d: %s restored differs from the saved", r, st.Name)
			}
		}
	}
	ranks[1].Step = 4
	if err := SaveShards(gotPath, ranks); err == nil || !strings.Contains(err.Error(), "steps") {
		t.Errorf("ranks at steps 3 and 4 saved: %v", err)
	}
	if err := SaveShards(gotPath, []*AdamW{ranks[0], ranks[0]}); err == nil || !strings.Contains(err.Error(), "held by ranks 0 and 1") {
		t.Errorf("a parameter saved as two ranks' own: %v", err)
	}
}
