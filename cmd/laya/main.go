// Command laya runs Laya typed-decision models: predict, tokenize, inspect,
// route. Run "laya help" for the list, "laya CMD -h" for one command.
//
// Exit status: 0 on success, 1 when the work failed, 2 for a mistake on the
// command line (reported in one line, with the command whose -h explains
// it).
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
	"strings"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/cli"
)

// command is one subcommand; each lives in its own file and registers itself.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error
}

var commands = map[string]command{}

func register(name string, c command) { commands[name] = c }

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "laya: run Laya typed-decision models (choice, score, noul) in one encoder pass.")
	fmt.Fprintln(w, "\nUsage: laya COMMAND [flags]   (laya COMMAND -h for its flags; laya --version)\n\nCommands:")
	for _, n := range commandNames() {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program, returning its exit status.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		usage(stdout)
		return 0
	}
	if cli.IsVersion(args) {
		fmt.Fprintln(stdout, cli.Version("laya"))
		return 0
	}
	c, ok := commands[args[0]]
	if !ok {
		err := cli.Usagef("unknown command %q (commands: %s)", args[0], strings.Join(commandNames(), ", "))
		return cli.Report(stderr, "laya", err)
	}
	err := c.run(ctx, args[1:], stdin, stdout, stderr)
	if errors.Is(err, backend.ErrUnknownBackend) {
		err = cli.Usage(err) // a --backend this binary does not have; the error lists those it has
	}
	return cli.Report(stderr, "laya "+args[0], err)
}

// backendList is the backends this binary has, as --backend spells them.
func backendList() string { return strings.Join(backend.Names(), ", ") }

// usagef is a mistake on the command line: main prints it in one line
// with a pointer to the command's -h, and exits 2.
func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

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
// already printed and the command should just return); a mistake is a
// one-line usage error. Arguments left after the flags are a mistake too,
// since every command takes its input by flag or stdin.
func parseFlags(fs *flag.FlagSet, args []string) (help bool, err error) {
	if help, err := parseFlagsThen(fs, args); help || err != nil {
		return help, err
	}
	if fs.NArg() > 0 {
		return false, usagef("unexpected argument %q: every input is given by a flag or on stdin", fs.Arg(0))
	}
	return false, nil
}

// parseFlagsThen is parseFlags for a command that takes arguments after its
// flags, and flags after those (fs.Args() holds the rest).
func parseFlagsThen(fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := cli.ParseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, err
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
