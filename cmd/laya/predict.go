package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/hub"
)

func init() {
	register("predict", command{
		summary: "answer choice/score/noul questions about a state with a Laya checkpoint",
		run:     runPredict,
	})
}

const predictUsage = `Usage: laya predict --model DIR|ORG/NAME [--backend cpu] [--batch-size N]
                    [--long [--max-windows N] [--overlap N] | --tournament]
                    (--request FILE|- | --state TEXT|@FILE (--questions FILE|JSON | --preset NAME))

Answers every question about the state in one encoder pass and prints the
answer JSON exactly as upstream Laya writes it (json.dumps, ensure_ascii=False),
followed by a newline.

A request is {"state": ..., "questions": {...}}: the state is a text or any
JSON value (an email object, a conversation list); questions map an id to a
definition of type "choice" (criteria: {label: description} or [labels]),
"score" (criteria: [level 0, level 1, ...]) or "noul" (a yes/no question; the
answer is P(true)). Key order is kept everywhere.

--model is a checkpoint directory, or a Hugging Face id such as
convaiinnovations/laya, convaiinnovations/laya/multilingual or
aac6fef/laya-mlx@<revision>: files are downloaded once into the Hugging Face
cache (HF_HUB_CACHE, HF_HOME; HF_TOKEN for private repos; HF_HUB_OFFLINE=1 to
forbid the network) with a progress bar, and reused from there.

--preset picks a built-in question set instead of --questions: triage
(customer messages, field "message"), email ("body"), guard (LLM prompts,
"prompt"), moderation ("post") or router ("request").

--backend picks the compute engine; this build has: %s. auto (the
default) is metal on Apple Silicon when the GPU passes its self-test, else cpu,
and says why on stderr; cpu runs everywhere; metal (the Apple GPU) is there on
macOS on Apple Silicon, and naming it means metal or an error.

--state takes the text itself, @FILE to read it from a file, or - for stdin;
it is used as text unless it parses as a JSON object or list; --state '' is an
empty text. --questions takes a file name, or the JSON object itself when it
starts with '{'.

--long reads a state longer than a question's row in windows instead of
cutting it (a text from its start, a list from its newest end, --max-windows
per question, default 16, neighbours sharing --overlap tokens, default a
quarter of the window): noul answers take the highest P(true), score answers
the highest level, choice answers the most confident window; usage.windows
says how each question read it. A state that fits is answered as without
--long.

--tournament plays a choice of more than 16 labels in groups of at most 16,
each round in one pass, the group winners meeting in a final call;
usage.tournament reports the rounds. Other questions are answered as usual.

Example:
  $ laya predict --model testdata/oracle/checkpoints/real-en --long --max-windows 4 \
      --state @README.md --questions '{"go": {"type": "noul", "instructions": "Is this about Go?"}}'

  $ laya predict --model testdata/oracle/checkpoints/real-en \
      --request testdata/requests/email.json
  {"model": "laya-rl-agent", "answers": {"department": {"type": "choice", ...}}, "usage": {...}}

  $ laya predict --model DIR --state 'I was charged twice, please refund me.' \
      --questions '{"refund": {"type": "noul", "instructions": "Does the customer ask for money back?"}}'

Flags:
`

func runPredict(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("predict", fmt.Sprintf(predictUsage, backendList()), stderr)
	model := fs.String("model", "", "Laya checkpoint `DIR`")
	backend := fs.String("backend", "auto", "compute `backend`: "+backendList())
	batchSize := fs.Int("batch-size", 0, "question rows per forward batch, 0 for the backend's: 16, on cuda up to 64 rows and 8192 tokens")
	requestArg := fs.String("request", "", "request JSON `FILE`, or - for stdin")
	stateArg := fs.String("state", "", "state `TEXT`, @FILE, or - for stdin")
	questionsArg := fs.String("questions", "", "questions JSON `FILE`, or the JSON itself")
	preset := fs.String("preset", "", "built-in question set `NAME`: "+presetNames)
	long := fs.Bool("long", false, "read a state longer than a row in windows")
	maxWindows := fs.Int("max-windows", laya.DefaultMaxWindows, "with --long: the most windows per question (`N`, at most 256)")
	overlap := fs.Int("overlap", 0, "with --long: tokens neighbouring windows share (`N`; 0: a quarter of the window)")
	tournament := fs.Bool("tournament", false, "play a choice of more than 16 labels in groups of 16 and a final")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if *model == "" {
		return usagef("--model is required: a checkpoint DIR or a Hub id such as convaiinnovations/laya")
	}
	switch {
	case *long && *tournament:
		return usagef("give --long or --tournament, not both")
	case !*long && (flagGiven(fs, "max-windows") || flagGiven(fs, "overlap")):
		return usagef("--max-windows and --overlap need --long")
	case *maxWindows < 1 || *maxWindows > laya.MaxLongWindows:
		return usagef("--max-windows %d: want 1 to %d", *maxWindows, laya.MaxLongWindows)
	case *overlap < 0:
		return usagef("--overlap %d: want 0 or more tokens", *overlap)
	}
	var stateGiven *string // nil when --state is absent; --state '' is an empty state
	if flagGiven(fs, "state") {
		stateGiven = stateArg
	}
	state, questions, err := readPredictInput(*requestArg, stateGiven, *questionsArg, *preset, stdin)
	if err != nil {
		return err
	}
	agent, err := laya.Load(ctx, *model, laya.WithBackend(*backend), laya.WithBatchSize(*batchSize),
		laya.WithHub(progressClient(stderr)))
	if err != nil {
		return err
	}
	defer agent.Close()
	printBackendNote(stderr, agent)
	var res *laya.Result
	req := laya.Request{State: state, Questions: questions}
	switch {
	case *long:
		res, err = agent.PredictLong(ctx, req, laya.LongOptions{MaxWindows: *maxWindows, Overlap: *overlap})
	case *tournament:
		res, err = agent.PredictTournament(ctx, req)
	default:
		res, err = agent.PredictRequest(ctx, req)
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(stdout, res.String())
	return err
}

// readPredictInput reads either a whole request or a state and questions, validating the
// combination of flags before anything is loaded. stateArg is nil when --state is absent.
func readPredictInput(requestArg string, stateArg *string, questionsArg, preset string, stdin io.Reader) (laya.State, laya.Questions, error) {
	switch {
	case requestArg != "" && (stateArg != nil || questionsArg != "" || preset != ""):
		return laya.State{}, nil, usagef("give either --request or --state with --questions or --preset, not both")
	case questionsArg != "" && preset != "":
		return laya.State{}, nil, usagef("give --questions or --preset, not both")
	case requestArg != "":
		data, err := readFileOrStdin(requestArg, stdin)
		if err != nil {
			return laya.State{}, nil, fmt.Errorf("--request: %w", err)
		}
		req, err := laya.ParseRequest(data)
		if err != nil {
			return laya.State{}, nil, fmt.Errorf("%s: %w", requestArg, err)
		}
		return req.State, req.Questions, nil
	case stateArg == nil || (questionsArg == "" && preset == ""):
		return laya.State{}, nil, usagef("give --request FILE, or --state with --questions or --preset")
	}
	state, err := readState(*stateArg, stdin)
	if err != nil {
		return laya.State{}, nil, err
	}
	if preset != "" {
		questions, err := presetQuestions(preset)
		return state, questions, err
	}
	qdata := []byte(questionsArg)
	if !strings.HasPrefix(strings.TrimSpace(questionsArg), "{") {
		var err error
		if qdata, err = readFileOrStdin(questionsArg, stdin); err != nil {
			return laya.State{}, nil, fmt.Errorf("--questions: %w", err)
		}
	}
	questions, err := laya.ParseQuestions(qdata)
	if err != nil {
		return laya.State{}, nil, err
	}
	return state, questions, nil
}

// readState reads a --state argument: the text itself, @FILE, or - (or @-)
// for stdin. Content holding a JSON object or list, given inline or read, is
// a structured state (key order kept); anything else, "" included, is text.
func readState(arg string, stdin io.Reader) (laya.State, error) {
	data := []byte(arg)
	if name, fromFile := strings.CutPrefix(arg, "@"); fromFile || arg == "-" {
		if !fromFile {
			name = "-"
		}
		var err error
		if data, err = readFileOrStdin(name, stdin); err != nil {
			return laya.State{}, fmt.Errorf("--state: %w", err)
		}
	}
	if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		if st, err := laya.JSONState(trimmed); err == nil {
			return st, nil
		}
	}
	return laya.Text(string(data)), nil
}

func readFileOrStdin(name string, stdin io.Reader) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(stdin)
	}
	return os.ReadFile(name)
}

// progressClient is the Hub client of predict and serve: configured from the
// environment (HF_TOKEN, HF_HUB_CACHE, HF_HUB_OFFLINE, …), with a progress
// bar on w while checkpoint files download.
func progressClient(w io.Writer) *hub.Client {
	c := hub.NewClient()
	c.Progress = hub.TerminalProgress(w)
	return c
}
