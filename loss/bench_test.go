package loss

import (
	"fmt"
	"syscall"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// BenchmarkPolicyMicroBatch is one train micro-batch on the CPU as a GRPO
// step runs it: 4 rollouts of a 32-token prompt and a 64-token completion
// (95 rows each, 31 of them prompt rows with no loss weight, the shape the
// trainer profile in issue 14 saw) on the qwen3-30m shape with LoRA r16 on
// every projection: forward, loss and backward into the adapter. Compare
// builds with benchstat or best-of-N, interleaved on one machine. Besides
// wall time it reports the process's CPU time per op (every thread,
// OpenBLAS's included), which other load on a shared machine disturbs
// less than the wall time.
func BenchmarkPolicyMicroBatch(b *testing.B) {
	// vocab=151936 is the same shape with Qwen3's vocabulary, where the LM
	// head is the largest GEMM of the step.
	for _, vocab := range []int{8192, 151936} {
		b.Run(fmt.Sprintf("vocab=%d", vocab), func(b *testing.B) {
			mc, _ := model.Shape("qwen3-30m")
			mc.VocabSize = vocab
			benchMicroBatch(b, mc)
		})
	}
}

func benchMicroBatch(b *testing.B, mc *model.Config) {
	base := model.NewRandom(mc, cpu.New(), 1)
	defer base.Free()
	ad, err := lora.New(base, lora.DefaultConfig(), 1)
	if err != nil {
		b.Fatal(err)
	}
	defer ad.Free()
	policy := base.WithAdapter(ad)
	var samples []Sample
	for s := range 4 {
		tok := func(i int) int32 { return int32(i*131+s*17+3) % int32(mc.VocabSize) }
		smp := Sample{Advantage: float32(s) - 1.5}
		for i := range 32 {
			smp.Prompt = append(smp.Prompt, tok(i))
		}
		for i := range 64 {
			smp.Completion = append(smp.Completion, tok(32+i))
			smp.OldLogp = append(smp.OldLogp, -9)
		}
		samples = append(samples, smp)
	}
	cfg := DefaultConfig()
	cpu0 := cpuTime()
	b.ResetTimer()
	for range b.N {
		if _, err := PolicyGradient(policy, samples, cfg, 64, 4*95); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(4*95*b.N)/b.Elapsed().Seconds(), "tok/s")
	b.ReportMetric((cpuTime()-cpu0)*1e3/float64(b.N), "cpu-ms/op")
}

// cpuTime is the user + system CPU seconds the process has used.
func cpuTime() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
