package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/router"
)

func init() {
	register("route", command{
		summary: "show which Laya checkpoint a request would go to, and why (loads no model)",
		run:     runRoute,
	})
}

const routeUsage = `Usage: laya route --state TEXT|@FILE|- [--questions FILE|JSON | --preset NAME]
                  [--model NAME] [--task NAME] [--lang CODE] [--auto-task]
                  [--default NAME] [--repos bundle|standalone|mlx]
       laya route --batch [FILE|-] [the same flags, as defaults for every line]

Prints the routing decision as JSON: the model (english, multilingual or
typed-decisions), the repository it loads from, the reason, the language
detection and the matched typed-decisions workflow. Nothing is downloaded or
loaded. Precedence: --model > --task > workflow (with --auto-task) > --lang >
detection of the state's script and language > --default.

--state takes the text itself, @FILE to read it, or - for stdin; content that
parses as a JSON object or list is a structured state, whose string values
(not its keys, numbers or booleans, nothing nested deeper than 6 levels) are
what detection reads. An empty --state '' is a valid, empty state. --questions
takes a file or the JSON object itself (needed only for workflow detection);
--preset uses a built-in set: triage, email, guard, moderation, router.

--batch reads JSON Lines from FILE, or stdin when FILE is - or absent, one
request per line:
  {"state": ..., "args": {"model": ..., "task": ..., "lang": ..., "default": ...,
   "auto_task_detection": true|false, "questions": {...}}}
and prints one decision per line, in input order, or {"error": "line N: ..."}
for a line that cannot be routed; a bad line does not stop the rest. Every
args field is optional (null is the same as absent) and overrides the flag of
the same meaning; "state" may be any JSON value, null included. Blank lines
are skipped; a line longer than --max-line-bytes is an error line, and is
never held in memory whole.

Examples:
  $ laya route --state 'Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag.'
  {"model": "multilingual", "repo": "convaiinnovations/laya/multilingual", "reason": "Latin script but language looks like 'de', not English", ...}

  $ printf '%s\n' '{"state": {"subject": "Refund", "body": "Bonjour, je voudrais un remboursement"}}' \
      '{"state": "hello", "args": {"model": "ml"}}' | laya route --batch
  {"model": "multilingual", ..., "reason": "Latin script but language looks like 'fr', not English", ...}
  {"model": "multilingual", ..., "reason": "explicit model='ml'", ...}

Flags:
`

func runRoute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("route", routeUsage, stderr)
	stateArg := fs.String("state", "", "state `TEXT`, @FILE, or - for stdin ('' is an empty state)")
	questionsArg := fs.String("questions", "", "questions JSON `FILE`, or the JSON itself")
	preset := fs.String("preset", "", "built-in question set `NAME`")
	model := fs.String("model", "", "explicit model `NAME` or alias")
	task := fs.String("task", "", "explicit task (typed_decisions) or model `NAME`")
	langCode := fs.String("lang", "", "language `CODE` of the state (en, de, pt-BR, en_US.UTF-8)")
	autoTask := fs.Bool("auto-task", false, "route typed-decisions workflows by question ids")
	defaultModel := fs.String("default", "english", "model `NAME` for states whose language nothing identifies")
	repos := fs.String("repos", "bundle", "repository set: bundle, standalone or mlx")
	batch := fs.Bool("batch", false, "route JSON Lines requests from FILE or stdin, one decision per line")
	maxLine := fs.Int("max-line-bytes", defaultMaxBatchLine, "longest --batch line, in `bytes`")
	// Flags may follow the --batch file name (laya route --batch in.jsonl --default ml).
	var positional []string
	for {
		if help, err := parseFlagsThen(fs, args); help || err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
	stateGiven := flagGiven(fs, "state")
	switch {
	case *batch && stateGiven:
		return usagef("--batch reads its states from the lines; drop --state")
	case *batch && len(positional) > 1:
		return usagef("--batch takes one input file, got %d: %q", len(positional), positional)
	case !*batch && len(positional) > 0:
		return usagef("unexpected argument %q: give the state with --state", positional[0])
	case !*batch && !stateGiven:
		return usagef("--state is required: give the text, @FILE or - for stdin ('' for an empty state), or use --batch")
	}
	questions, err := routeQuestions(*questionsArg, *preset)
	if err != nil {
		return err
	}
	routers := &routerSet{repos: *repos, byConfig: map[routerConfig]*router.Router{}}
	defaults := batchDefaults{
		questions: questions,
		opts:      router.RouteOptions{Model: *model, Task: *task, Lang: *langCode},
		config:    routerConfig{defaultModel: *defaultModel, autoTask: *autoTask},
	}
	// Flag values are checked once, before any line is read.
	if _, err := routers.get(defaults.config); err != nil {
		return err
	}
	if *batch {
		if *maxLine < 1 {
			return usagef("--max-line-bytes %d: want a positive number of bytes", *maxLine)
		}
		in := stdin
		if len(positional) == 1 && positional[0] != "-" {
			name := positional[0]
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		return routeBatch(ctx, in, stdout, routers, defaults, *maxLine)
	}
	state, err := readState(*stateArg, stdin)
	if err != nil {
		return err
	}
	r, err := routers.get(defaults.config)
	if err != nil {
		return err
	}
	decision, err := r.Route(state, questions, defaults.opts)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, decision.Value().String())
	return err
}

// routerConfig is what a Router is built with that a batch line may set.
type routerConfig struct {
	defaultModel string
	autoTask     bool
}

// routerSet builds one Router per configuration the input asks for (routers
// are cheap: nothing is loaded to route).
type routerSet struct {
	repos    string
	byConfig map[routerConfig]*router.Router
}

func (s *routerSet) get(c routerConfig) (*router.Router, error) {
	if r, ok := s.byConfig[c]; ok {
		return r, nil
	}
	opts := []router.Option{router.WithDefaultModel(c.defaultModel)}
	switch s.repos {
	case "bundle":
	case "standalone":
		opts = append(opts, router.WithStandaloneRepos())
	case "mlx":
		opts = append(opts, router.WithModels(router.MLXModels()))
	default:
		return nil, fmt.Errorf("--repos %q: use bundle, standalone or mlx", s.repos)
	}
	if c.autoTask {
		opts = append(opts, router.WithAutoTaskDetection())
	}
	r, err := router.New(opts...)
	if err != nil {
		return nil, err
	}
	if len(s.byConfig) < 64 { // a hostile input cannot grow the cache without bound
		s.byConfig[c] = r
	}
	return r, nil
}

func routeQuestions(arg, preset string) (laya.Questions, error) {
	if arg != "" && preset != "" {
		return nil, usagef("give --questions or --preset, not both")
	}
	if preset != "" {
		return presetQuestions(preset)
	}
	if arg == "" {
		return nil, nil
	}
	data := []byte(arg)
	if !strings.HasPrefix(strings.TrimSpace(arg), "{") {
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, fmt.Errorf("--questions: %w", err)
		}
		data = b
	}
	qs, err := laya.ParseQuestions(data)
	if err != nil {
		return nil, fmt.Errorf("--questions: %w", err)
	}
	return qs, nil
}
