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
// that splits the phase's wall time into the ops' GPU time, the GPU's
// idle time between ops and the host's time outside the GPU's span
// (before the first op, after the last), then the entries with the most
// time.
func printProfiles(w io.Writer, profiles []bench.PhaseProfile) error {
	for _, p := range profiles {
		fmt.Fprintf(w, "\nprofile of %s: wall %.3f ms = kernels %.3f ms (%.1f %%) + GPU idle between ops %.3f ms (launch gaps, host work) + host outside the span %.3f ms; %d ops timed, %d captured untimed; %s\n",
			p.Phase, p.WallMs, p.KernelMs, 100*p.KernelMs/p.WallMs, p.SpanMs-p.KernelMs, p.WallMs-p.SpanMs, p.Launches(), p.Untimed, p.Note)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "KERNEL\tLAUNCHES\tTOTAL MS\t% OF WALL\tMEAN µs\t")
		for _, k := range p.Kernels[:min(profileTop, len(p.Kernels))] {
			fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.1f\t%.1f\t\n", k.Name, k.Launches, k.Ms, 100*k.Ms/p.WallMs, 1000*k.Ms/float64(k.Launches))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if n := len(p.Kernels) - profileTop; n > 0 {
			fmt.Fprintf(w, "  and %d more entries (--json has every one)\n", n)
		}
	}
	return nil
}
