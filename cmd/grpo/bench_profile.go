package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/grpo-dev/grpo/bench"
)

// profileTop is how many entries of each phase's kernel profile the
// table shows (--json has them all).
const profileTop = 15

// printProfiles writes each phase's kernel profile (--profile): a line
// that splits the phase's wall time into the GPU's time in ops, its idle
// time between them and the host's time before the first one, then the
// entries with the largest total time.
func printProfiles(w io.Writer, profiles []bench.PhaseProfile) error {
	for _, p := range profiles {
		fmt.Fprintf(w, "\nprofile of %s: wall %.3f ms = kernels %.3f ms (%.1f %%) + GPU idle between ops %.3f ms (launch gaps, host work between launches) + host before the first op %.3f ms; %d ops",
			p.Phase, p.WallMs, p.KernelMs, pct(p.KernelMs, p.WallMs), p.SpanMs-p.KernelMs, p.WallMs-p.SpanMs, p.Launches())
		if p.Untimed > 0 {
			fmt.Fprintf(w, ", %d captured into graphs (untimed)", p.Untimed)
		}
		fmt.Fprintln(w)
		if p.Note != "" {
			fmt.Fprintf(w, "  (%s)\n", p.Note)
		}
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "KERNEL\tLAUNCHES\tTOTAL MS\t% OF WALL\tMEAN µs\t")
		var restMs float64
		for i, k := range p.Kernels {
			if i >= profileTop {
				restMs += k.Ms
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.1f\t%.1f\t\n", k.Name, k.Launches, k.Ms, pct(k.Ms, p.WallMs), 1000*k.Ms/float64(k.Launches))
		}
		if n := len(p.Kernels) - profileTop; n > 0 {
			fmt.Fprintf(tw, "(%d more)\t\t%.3f\t%.1f\t\t\n", n, restMs, pct(restMs, p.WallMs))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

func pct(part, whole float64) float64 {
	if whole <= 0 {
		return 0
	}
	return 100 * part / whole
}
