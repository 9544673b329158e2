package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// IO is where a command reads and writes; tests pass buffers.
type IO struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// Exit statuses shared by every subcommand.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and found a problem (e.g. a chaos diff)
	exitUsage = 2 // bad input: flags, arguments or stdin
)

// command is one subcommand. Each lives in its own file and registers itself
// in init, so subcommands can be added without touching this file.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, io IO) int
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("statelab: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

// defaultCommand runs when statelab is started without a subcommand. The web
// server replaces "help" here once it exists.
var defaultCommand = "help"

// Main runs statelab with args (without the program name) and returns the
// exit status.
func Main(ctx context.Context, args []string, io IO) int {
	name := defaultCommand
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		name, args = args[0], args[1:]
	} else if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
		name, args = "help", nil
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(io.Err, "statelab: unknown command %q; run 'statelab help' to list the commands\n", name)
		return exitUsage
	}
	return c.run(ctx, args, io)
}

func init() {
	register(command{name: "help", summary: "list the commands", run: runHelp})
}

func runHelp(_ context.Context, _ []string, io IO) int {
	fmt.Fprintln(io.Out, "StateLab: see how Apache Flink keeps state, checkpoints it, and rescales it.")
	fmt.Fprintln(io.Out)
	fmt.Fprintln(io.Out, "Usage: statelab <command> [flags]")
	fmt.Fprintln(io.Out)
	fmt.Fprintln(io.Out, "Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(io.Out, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(io.Out)
	fmt.Fprintln(io.Out, "Run 'statelab <command> -h' for a command's flags.")
	return exitOK
}

// newFlagSet returns a flag set that reports errors through usageError
// rather than printing the whole usage text.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("statelab "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses args; on -h it prints the flags and returns exitOK with
// done set, on a bad flag it prints one line and returns exitUsage.
func parseFlags(fs *flag.FlagSet, args []string, io IO) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return exitOK, false
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(io.Out)
		fmt.Fprintf(io.Out, "Usage of %s:\n", fs.Name())
		fs.PrintDefaults()
		return exitOK, true
	default:
		return usageError(io, fs.Name(), "%v (run '%s -h' for the flags)", err, fs.Name())
	}
}

// usageError prints "statelab <cmd>: <message>" as one line and returns exitUsage.
func usageError(io IO, cmd, format string, a ...any) (int, bool) {
	fmt.Fprintf(io.Err, "%s: %s\n", cmd, fmt.Sprintf(format, a...))
	return exitUsage, true
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
