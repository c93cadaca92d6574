package bench

import (
	"errors"
	"fmt"
	"time"

	"github.com/grpo-dev/grpo/estimate/perf"
	"github.com/grpo-dev/grpo/model"
)

// Options size a bench run; the comments name the `grpo bench` flag each
// field is. Zero Group, PrefillLogits and Recompute mean 1, "last" and
// "none".
type Options struct {
	Prefill       int     // --prefill: prompt tokens per sequence
	Decode        int     // --decode: decode steps (0 skips the decode figure)
	Batch         int     // --batch: sequences processed together
	Group         int     // --group: rollouts per prompt; Batch/Group prompts, each prefilled once and forked
	Repeat        int     // --repeat: measured runs per figure after one warm-up; the best is reported
	PrefillChunk  int     // --prefill-chunk: most tokens per prefill forward
	PrefillLogits string  // --prefill-logits: "last" (each prompt's last token) or "all" (every position)
	Temperature   float64 // --temperature: decode sampling temperature (0: greedy)
	TrainSeqs     int     // --train-seqs: sequences of the train-step figure (0 skips it)
	TrainLen      int     // --train-len: tokens per train sequence
	LoRARank      int     // --lora-rank: adapter rank of the train step and the GRPO step
	Recompute     string  // --recompute: the train step's recompute setting
	NoMatmul      bool    // --no-matmul: skip the matmul figures
	Profile       bool    // --profile: a kernel profile of each figure's unit of work (profile.go)
	Step          StepOptions
	Progress      Progress
}

// Progress is told what a run measures as it goes, so that a caller can
// show a long bench's figures as they come; nil fields are not called.
type Progress struct {
	Figure func(Figure)              // each figure, when measured, in Results' order
	OpByOp func(err error)           // decode ran op by op: why the device's decode graph failed
	Step   func(n int, r StepResult) // each measured GRPO step, n from 1
}

// Figure is one measured figure (the JSON of `grpo bench --json`'s
// results: scripts/gpu-check.sh reads them by name).
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
}

// Results are what a run measured: the figures and counts, or with
// Step.Enabled the best GRPO step.
type Results struct {
	Figures []Figure
	Counts  Counts      // filled where the backend counts (perf.Counter)
	Step    *StepResult // Step.Enabled: each time the best of its own over the measured steps
	// Profiles are Profile's kernel profiles, one per unit of work, in
	// the order measured.
	Profiles []PhaseProfile
}

// Run measures on m's backend: with o.Step.Enabled whole GRPO steps
// (runStep), else prefill and decode, the LoRA train step, on a GPU the
// roofline and HFU figures, and matmul. m's weights are tagged for the
// counters (perf.TagWeights); the caller still owns and frees m.
func Run(m *model.Model, o Options) (*Results, error) {
	if err := o.Check(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	if o.Profile && perf.Counter(m.Backend) == nil {
		return nil, errNoProfile
	}
	if o.Step.Enabled {
		best, profiles, err := runStep(m, o)
		if err != nil {
			return nil, err
		}
		return &Results{Step: best, Profiles: profiles}, nil
	}
	res := &Results{}
	add := func(name string, v float64, unit string) {
		f := Figure{name, v, unit}
		res.Figures = append(res.Figures, f)
		if o.Progress.Figure != nil {
			o.Progress.Figure(f)
		}
	}
	be := m.Backend
	perf.TagWeights(m, nil)
	prefill, decode, err := measureModel(m, o, &res.Counts, &res.Profiles)
	if err != nil {
		return nil, err
	}
	add(fmt.Sprintf("prefill %dx%d", o.Batch/o.Group, o.Prefill), prefill, "tok/s")
	if o.Decode > 0 {
		add(fmt.Sprintf("decode batch %d", o.Batch), decode, "tok/s")
	}
	var train float64
	if o.TrainSeqs > 0 {
		if train, err = measureTrain(m, o, &res.Counts, &res.Profiles); err != nil {
			return nil, err
		}
		name := fmt.Sprintf("lora train %dx%d r%d", o.TrainSeqs, o.TrainLen, o.LoRARank)
		if o.Recompute != "none" {
			name += " recompute " + o.Recompute
		}
		add(name, train, "tok/s")
	}
	if be.Describe().GPU {
		for _, r := range rooflineFigures(m.Config, WeightDType(m).Size(), perf.KVDType(be), o, prefill, decode, train) {
			add(r.Name, r.Value, r.Unit)
		}
		var prefillFLOPs int64
		if res.Counts.Prefill != nil {
			prefillFLOPs = res.Counts.Prefill.FLOPs
		}
		for _, r := range hfuFigures(m.Config, o, prefillFLOPs, res.Counts.TrainStepFLOPs, prefill, train) {
			add(r.Name, r.Value, r.Unit)
		}
	}
	if !o.NoMatmul {
		for _, s := range [][3]int{{512, 512, 512}, {512, 2048, 512}} {
			add(fmt.Sprintf("matmul %dx%dx%d", s[0], s[1], s[2]), measureMatMul(be, s[0], s[1], s[2], o.Repeat), "GFLOP/s")
		}
	}
	return res, nil
}

// Check fills the zero defaults and refuses sizes the runs cannot take,
// naming each field by its flag (Options' comments), so the CLI reports
// the same error, before it loads a model, as a usage error.
func (o *Options) Check() error {
	if o.Group == 0 {
		o.Group = 1
	}
	if o.PrefillLogits == "" {
		o.PrefillLogits = "last"
	}
	if o.Recompute == "" {
		o.Recompute = "none"
	}
	switch {
	case o.Prefill < 1 || o.Batch < 1 || o.Repeat < 1 || o.Decode < 0 || o.PrefillChunk < 1:
		return errors.New("--prefill, --batch, --repeat and --prefill-chunk must be >= 1 and --decode >= 0")
	case o.Group < 1 || o.Batch%o.Group != 0:
		return fmt.Errorf("--group %d: want a divisor of --batch %d (batch = prompts × rollouts per prompt)", o.Group, o.Batch)
	case o.PrefillLogits != "last" && o.PrefillLogits != "all":
		return fmt.Errorf("--prefill-logits %q: want last or all", o.PrefillLogits)
	}
	if _, _, err := model.ParseRecomputeSetting(o.Recompute); err != nil {
		return fmt.Errorf("--recompute: %w", err)
	}
	if o.Step.Enabled {
		return o.Step.Check()
	}
	return nil
}

// best runs f repeat+1 times and returns the shortest of the timed runs
// (every one but the first, the warm-up).
func best(repeat int, f func() error) (time.Duration, error) {
	var bestD time.Duration
	for i := range repeat + 1 {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if d := time.Since(t0); i > 0 && (bestD == 0 || d < bestD) {
			bestD = d
		}
	}
	return bestD, nil
}
