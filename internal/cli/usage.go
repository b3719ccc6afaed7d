package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// ExitUsage is the exit status of a mistake on the command line.
const ExitUsage = 2

// UsageError is a mistake on the command line, as opposed to a failure of
// the work the command was asked to do.
type UsageError struct {
	Err error
	// Help is the command whose -h explains the mistake ("laya-bench
	// --compare"); empty means the program Report was given.
	Help string
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError of the formatted message (%w wraps, as in
// fmt.Errorf).
func Usagef(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// Usage marks err as a usage error; nil stays nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	var u *UsageError
	if errors.As(err, &u) {
		return err
	}
	return &UsageError{Err: err}
}

// IsUsage reports whether err is, or wraps, a usage error.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Report writes err to stderr prefixed with prog ("laya predict") and
// returns the exit status: 0 for nil and flag.ErrHelp (the help was the
// output), ExitUsage for a usage error, which gets a second line pointing
// at the command's -h, and 1 for anything else.
func Report(stderr io.Writer, prog string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	var u *UsageError
	if !errors.As(err, &u) {
		return 1
	}
	help := u.Help
	if help == "" {
		help = prog
	}
	fmt.Fprintf(stderr, "run '%s -h' for usage\n", help)
	return ExitUsage
}

// ParseFlags parses args into fs. Unlike fs.Parse it prints nothing on a
// mistake: the error comes back as a one-line *UsageError naming the flag
// and what it takes. -h (or -help) prints fs.Usage and returns
// flag.ErrHelp.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if usage != nil {
			usage()
		} else {
			fs.PrintDefaults()
		}
		return flag.ErrHelp
	}
	return &UsageError{Err: errors.New(flagMistake(fs, err.Error()))}
}

// flagMistake rewrites the flag package's error texts (which it does not
// export as types) into one line that names the flag as a user types it and
// says what the flag takes.
func flagMistake(fs *flag.FlagSet, msg string) string {
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Sprintf("unknown flag %s (flags: %s)", dash(name), flagList(fs))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Sprintf("%s needs a value: %s", dash(name), wants(fs.Lookup(name)))
	}
	// invalid value "x" for flag -n: <cause>; invalid boolean value "x" for -n: <cause>
	for _, prefix := range []string{"invalid value ", "invalid boolean value "} {
		rest, ok := strings.CutPrefix(msg, prefix)
		if !ok {
			continue
		}
		i := strings.Index(rest, " for ")
		if i < 0 {
			break
		}
		value, rest := rest[:i], strings.TrimPrefix(rest[i+len(" for "):], "flag ")
		name, cause, _ := strings.Cut(strings.TrimPrefix(rest, "-"), ": ")
		f := fs.Lookup(name)
		if f == nil {
			break
		}
		if cause == "parse error" || cause == "value out of range" || prefix == "invalid boolean value " {
			return fmt.Sprintf("%s %s: want %s", dash(name), value, wants(f))
		}
		// A flag.Value's own Set error says what it wants.
		return fmt.Sprintf("%s %s: %s", dash(name), value, cause)
	}
	return msg
}

// wants says what flag f takes: its kind of value and its usage text.
func wants(f *flag.Flag) string {
	if f == nil {
		return "see the flags"
	}
	kind := ""
	switch fmt.Sprintf("%T", f.Value) {
	case "*flag.intValue", "*flag.int64Value":
		kind = "an integer"
	case "*flag.uintValue", "*flag.uint64Value":
		kind = "a non-negative integer"
	case "*flag.float64Value":
		kind = "a number"
	case "*flag.durationValue":
		kind = "a duration such as 500ms or 2s"
	case "*flag.boolValue":
		kind = "true or false"
	}
	_, usage := flag.UnquoteUsage(f)
	switch {
	case kind == "":
		return usage
	case usage == "":
		return kind
	}
	return kind + " (" + usage + ")"
}

// flagList is the flags of fs as a user types them, in the flag package's
// (lexical) order.
func flagList(fs *flag.FlagSet) string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, dash(f.Name)) })
	return strings.Join(names, ", ")
}

// dash writes a flag name as the commands' help does: -D, --model.
func dash(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
