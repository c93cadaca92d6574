package main

import (
	"cmp"
	"fmt"
	"text/tabwriter"

	"github.com/grpo-dev/grpo/model"
)

func init() {
	register(&command{
		name:    "models",
		summary: "list the supported model architectures and named benchmark shapes",
		usage:   "",
		help: `Any Hugging Face checkpoint whose config.json has one of the model_type values
below loads as it is (safetensors, BF16/F16/F32, single file or sharded), but
those marked "not supported yet": families Lab's configs name that grpo
refuses, in one line, before downloading them.

Example:
  grpo models`,
		run: func(args []string) error {
			if len(args) > 0 {
				return usagef("models takes no arguments")
			}
			w := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "MODEL_TYPE\tFAMILY\tEXAMPLE\tTOOL CALLS\tSUPPORT")
			for _, a := range model.Archs() {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", a.ModelType, a.Name, a.Example, a.ToolCalls, cmp.Or(a.Partial, "full"))
			}
			// Families Lab's configs name that grpo refuses, so the list
			// says so before a config does.
			for _, p := range model.PendingFamilies() {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", p.ModelType, p.Name, p.Example, p.ToolCalls, "not supported yet")
			}
			w.Flush()
			fmt.Println()
			w = tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SHAPE (grpo bench --shape)\tTYPE\tPARAMS\tACTIVE")
			for _, n := range model.ShapeNames() {
				c, _ := model.Shape(n)
				fmt.Fprintf(w, "%s\t%s\t%.1fM\t%.1fM\n", n, c.ModelType, float64(c.ParamCount())/1e6, float64(c.ActiveParamCount())/1e6)
			}
			return w.Flush()
		},
	})
}
