package main

import (
	"context"
	"errors"
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

Prints the routing decision as JSON: the model (english, multilingual or
typed-decisions), the repository it loads from, the reason, the language
detection and the matched typed-decisions workflow. Nothing is downloaded or
loaded. Precedence: --model > --task > workflow (with --auto-task) > --lang >
detection of the state's script and language > --default.

--state takes the text itself, @FILE to read it, or - for stdin; content that
parses as a JSON object or list is a structured state. --questions takes a file
or the JSON object itself (needed only for workflow detection); --preset uses a
built-in set: triage, email, guard, moderation, router.

Example:
  $ laya route --state 'Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag.'
  {"model": "multilingual", "repo": "convaiinnovations/laya/multilingual", "reason": "Latin script but language looks like 'de', not English", ...}

Flags:
`

func runRoute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("route", routeUsage, stderr)
	stateArg := fs.String("state", "", "state `TEXT`, @FILE, or - for stdin")
	questionsArg := fs.String("questions", "", "questions JSON `FILE`, or the JSON itself")
	preset := fs.String("preset", "", "built-in question set `NAME`")
	model := fs.String("model", "", "explicit model `NAME` or alias")
	task := fs.String("task", "", "explicit task (typed_decisions) or model `NAME`")
	langCode := fs.String("lang", "", "language `CODE` of the state (en, de, pt-BR, en_US.UTF-8)")
	autoTask := fs.Bool("auto-task", false, "route typed-decisions workflows by question ids")
	defaultModel := fs.String("default", "english", "model `NAME` for states whose language nothing identifies")
	repos := fs.String("repos", "bundle", "repository set: bundle, standalone or mlx")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *stateArg == "" {
		return errors.New("--state is required: give the text, @FILE or - for stdin")
	}
	state, err := readState(*stateArg, stdin)
	if err != nil {
		return err
	}
	questions, err := routeQuestions(*questionsArg, *preset)
	if err != nil {
		return err
	}
	opts := []router.Option{router.WithDefaultModel(*defaultModel)}
	switch *repos {
	case "bundle":
	case "standalone":
		opts = append(opts, router.WithStandaloneRepos())
	case "mlx":
		opts = append(opts, router.WithModels(router.MLXModels()))
	default:
		return fmt.Errorf("--repos %q: use bundle, standalone or mlx", *repos)
	}
	if *autoTask {
		opts = append(opts, router.WithAutoTaskDetection())
	}
	r, err := router.New(opts...)
	if err != nil {
		return err
	}
	decision, err := r.Route(state, questions, router.RouteOptions{Model: *model, Task: *task, Lang: *langCode})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, decision.Value().String())
	return err
}

func routeQuestions(arg, preset string) (laya.Questions, error) {
	if arg != "" && preset != "" {
		return nil, errors.New("give --questions or --preset, not both")
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
