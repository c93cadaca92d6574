package trainer

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/grpo-dev/grpo/rundir"
)

// TestLossFamilyTrains runs two steps under each loss of the family with
// a behaviour correction, from the [loss] keys to the metrics: every
// step trains its tokens (the tiny model's rewards tie, so the
// zero-advantage filter, which would drop every group, is off), its loss
// is finite, and the in-process sampler's log-probs are the trainer's
// own token for token (mismatch_kl ≈ 0, no correction cut anything),
// which they could not be were they lined up with the wrong tokens.
func TestLossFamilyTrains(t *testing.T) {
	for _, c := range []struct{ name, loss string }{
		{"dppo", "loss_type = \"dppo\"\n"},
		{"gspo", "loss_type = \"grpo\"\nimportance_sampling_level = \"sequence\"\nimportance_sampling_correction = \"sequence_mask\"\nimportance_sampling_clip_min = 0.5\nimportance_sampling_clip_max = 2\n"},
		{"cispo", "loss_type = \"cispo\"\nepsilon_high = 5.0\nimportance_sampling_correction = \"token_mask\"\nimportance_sampling_clip_min = 0.5\nimportance_sampling_clip_max = 2\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeRunFixture(t, dir, 2, 0)
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("\n[loss]\nfilter_zero_advantages = false\n" + c.loss)
			f.Close()
			out := filepath.Join(dir, "run")
			if _, err := runConfig(t, path, WithOutput(out)); err != nil {
				t.Fatal(err)
			}
			rows, err := rundir.ReadJSONL(filepath.Join(out, "metrics.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 2 {
				t.Fatalf("%d metric rows, want 2", len(rows))
			}
			for i, r := range rows {
				num := func(k string) float64 {
					v, ok := r[k].(float64)
					if !ok {
						t.Fatalf("step %d: metric %s missing: %v", i+1, k, r)
					}
					return v
				}
				trained, filtered := num("tokens/trained"), num("filter/zero_advantage_groups")
				if trained == 0 || filtered != 0 || math.IsNaN(num("loss")) || math.IsInf(num("loss"), 0) {
					t.Errorf("step %d: %v trained tokens, %v of 4 groups filtered, loss %v", i+1, trained, filtered, num("loss"))
				}
				if m := num("mismatch_kl"); !(m >= 0 && m < 1e-5) {
					t.Errorf("step %d: mismatch_kl %g between the in-process sampler and the trainer", i+1, m)
				}
				t.Logf("step %d: %v tokens trained, %v groups filtered, loss %.4g, mismatch_kl %.3g", i+1, trained, filtered, num("loss"), num("mismatch_kl"))
				if x := num("is_clip_ratio/region"); x != 0 {
					t.Errorf("step %d: the correction cut %v of the tokens of an on-policy batch", i+1, x)
				}
			}
		})
	}
}
