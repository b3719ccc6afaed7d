// Command laya runs Laya typed-decision models: predict, tokenize, inspect,
// route. Run "laya help" for the list, "laya CMD -h" for one command.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
)

// command is one subcommand; each lives in its own file and registers itself.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name string, c command) { commands[name] = c }

func usage(w io.Writer) {
	fmt.Fprintln(w, "laya: run Laya typed-decision models (choice, score, noul) in one encoder pass.")
	fmt.Fprintln(w, "\nUsage: laya COMMAND [flags]   (laya COMMAND -h for its flags)\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

func main() {
	if len(os.Args) < 2 || os.Args[1] == "help" || os.Args[1] == "-h" || os.Args[1] == "--help" {
		usage(os.Stdout)
		return
	}
	c, ok := commands[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "laya: unknown command %q\n", os.Args[1])
		usage(os.Stderr)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := c.run(ctx, os.Args[2:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "laya %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// newFlags returns the flag set of command name; -h prints usage, then the
// flags, to stderr.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args. help is true when -h was asked for (usage is
// already printed and the command should just return); arguments left after
// the flags are an error, since every command takes its input by flag or
// stdin.
func parseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, err
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("unexpected argument %q (see laya %s -h)", fs.Arg(0), fs.Name())
	}
	return false, nil
}

// flagGiven reports whether flag name was set on the command line, so that an
// empty value (an empty --state) can differ from an absent flag.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
