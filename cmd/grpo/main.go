// Command grpo trains open-weight LLMs with GRPO and LoRA. Each subcommand
// lives in its own file and registers itself in init; this file only
// dispatches and prints help. Logic a Go program embedding grpo would need
// lives in the packages, never here.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand of grpo.
type command struct {
	name    string
	summary string // one line for `grpo --help`
	usage   string // argument synopsis, e.g. "--model DIR --ids 1,2,3"
	// help is printed after the synopsis by `grpo help NAME`; it explains
	// what the command does, with examples.
	help string
	// flags declares the command's flags on fs; run receives the positional
	// arguments left after parsing.
	flags func(fs *flag.FlagSet)
	run   func(args []string) error
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("grpo: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// usageError marks an error caused by how the command was called; main
// prints the command's synopsis after it.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

func main() {
	os.Exit(runMain(os.Args[1:], os.Stdout, os.Stderr))
}

// stdout is where commands print their results; runMain points it at its
// writer so tests can read what a command printed.
var stdout io.Writer = os.Stdout

func runMain(args []string, out, stderr io.Writer) int {
	stdout = out
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" && len(args) == 1 {
		printOverview(stdout)
		return 0
	}
	if args[0] == "help" {
		c, ok := commands[args[1]]
		if !ok {
			fmt.Fprintf(stderr, "grpo: unknown command %q; run 'grpo --help' for the list\n", args[1])
			return 2
		}
		printCommandHelp(stdout, c)
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, "grpo", version)
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "grpo: unknown command %q; run 'grpo --help' for the list\n", args[0])
		return 2
	}
	fs := flag.NewFlagSet("grpo "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.flags != nil {
		c.flags(fs)
	}
	positional, err := parseInterleaved(fs, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printCommandHelp(stdout, c)
			return 0
		}
		fmt.Fprintf(stderr, "grpo %s: %v; see 'grpo %s --help'\n", c.name, err, c.name)
		return 2
	}
	if err := c.run(positional); err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintf(stderr, "grpo %s: %s; see 'grpo %s --help'\n", c.name, ue.msg, c.name)
			return 2
		}
		fmt.Fprintf(stderr, "grpo %s: %v\n", c.name, err)
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

const version = "0.1.0-dev"

func printOverview(w io.Writer) {
	fmt.Fprintln(w, "grpo: post-train open-weight LLMs with GRPO and LoRA, on local GPUs or the CPU.")
	fmt.Fprintln(w, "\nUsage: grpo COMMAND [flags] [args]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'grpo COMMAND --help' for a command's flags and examples.")
}

func printCommandHelp(w io.Writer, c *command) {
	fmt.Fprintf(w, "Usage: grpo %s %s\n\n%s\n", c.name, c.usage, c.summary)
	if c.help != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(c.help))
	}
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	if c.flags != nil {
		c.flags(fs)
	}
	has := false
	fs.VisitAll(func(*flag.Flag) { has = true })
	if has {
		fmt.Fprintln(w, "\nFlags:")
		fs.SetOutput(w)
		fs.PrintDefaults()
	}
}

// parseInterleaved lets flags follow positional arguments
// (`grpo eval gsm8k -n 20`), as users of other CLIs expect; "--" ends flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
