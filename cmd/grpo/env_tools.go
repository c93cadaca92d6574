package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/grpo-dev/grpo/env"
)

// showTools lists a tool environment's tools for grpo env show: each
// name with the first line of its schema's description, and max_turns.
func showTools(w io.Writer, e env.Environment) {
	tools := env.ToolsOf(e)
	if len(tools) == 0 {
		return
	}
	turns := ""
	if tl, ok := e.(env.TurnLimiter); ok && tl.MaxTurns() > 0 {
		turns = fmt.Sprintf(" (max_turns %d)", tl.MaxTurns())
	}
	fmt.Fprintf(w, "\nTools%s:\n", turns)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, t := range tools {
		spec, err := env.ParseToolSchema(t.Schema())
		if err != nil {
			fmt.Fprintf(tw, "  %s\tschema unusable: %v\n", t.Name(), err)
			continue
		}
		fmt.Fprintf(tw, "  %s\t%s\n", spec.Name, spec.Summary())
	}
	tw.Flush()
}
