package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/preset"
	"github.com/laya-metal/laya/pyjson"
)

func init() {
	register("presets", command{
		summary: "list the built-in question sets (--preset NAME), or print one as JSON",
		run:     runPresets,
	})
}

// builtinPreset is one question set --preset names.
type builtinPreset struct {
	name, reads string // reads: what the state is and the field the questions name
	questions   func() laya.Questions
}

var builtinPresets = []builtinPreset{
	{"triage", `support tickets, field "message"`, preset.TriageQuestions},
	{"email", `inbound emails, field "body"`, func() laya.Questions { return preset.EmailQuestions() }},
	{"guard", `prompts to an LLM (input guardrail), field "prompt"`, preset.GuardQuestions},
	{"moderation", `user content (content safety), field "post"`, preset.ModerationQuestions},
	{"router", `requests to route between LLMs, field "request"`, preset.RouterQuestions},
}

// presetNames lists the built-in question sets, as --preset spells them.
const presetNames = "triage, email, guard, moderation or router"

// presetQuestions returns a built-in question set by its --preset name.
func presetQuestions(name string) (laya.Questions, error) {
	for _, p := range builtinPresets {
		if p.name == name {
			return p.questions(), nil
		}
	}
	return nil, usagef("--preset %q: use %s", name, presetNames)
}

const presetsUsage = `Usage: laya presets [NAME]

Without NAME, lists the built-in question sets that predict and route take
with --preset NAME, each with the state it is written for and its questions
(id, type, instructions). With NAME, prints that set as JSON, in the form
--questions takes, so that it can be saved and edited.

Examples:
  $ laya presets
  $ laya presets triage > triage.json
  $ laya predict --model testdata/oracle/checkpoints/real-en --state '{"message": "I was charged twice"}' --preset triage

Flags:
`

func runPresets(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("presets", presetsUsage, stderr)
	if help, err := parseFlagsThen(fs, args); help || err != nil {
		return err
	}
	switch fs.NArg() {
	case 0:
		return listPresets(stdout)
	case 1:
		qs, err := presetQuestions(fs.Arg(0))
		if err != nil {
			return usagef("unknown preset %q: use %s", fs.Arg(0), presetNames)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, []byte(qs.Value().String()), "", "  "); err != nil {
			return err
		}
		out.WriteByte('\n')
		_, err = stdout.Write(out.Bytes())
		return err
	}
	return usagef("want at most one preset NAME, got %q", fs.Args())
}

func listPresets(w io.Writer) error {
	for i, p := range builtinPresets {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s):\n", p.name, p.reads)
		for _, q := range p.questions() {
			qtype, _ := q.Definition.Get("type")
			instructions, _ := q.Definition.Get("instructions")
			fmt.Fprintf(w, "  %-18s %-7s %s\n", q.ID, pyjson.Str(qtype), strings.TrimSpace(pyjson.Str(instructions)))
		}
	}
	return nil
}
