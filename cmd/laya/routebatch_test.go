package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// batchCase is one --batch line and the decision upstream's router gives it.
// The expectations were worked by hand from upstream's source
// (NandhaKishorM/laya laya/router.py Router._route and laya/lang.py
// _iter_text/state_text/analyse): precedence model > task > workflow (with
// auto_task_detection) > lang > lang_guess > detection > default; detection
// reads the string leaves only, keys ignored, "if _depth > 6 or state is
// None: return []", numbers and booleans give no text. Where a case turns on
// the stopword heuristic (pt, de), the word counts are in the comment; the
// heuristic itself is checked against laya-mlx's own output in lang's and
// router's tests.
type batchCase struct {
	line     string
	model    string // "" for an error line
	reason   string // for an error line: a part of the message
	workflow string // "" for null
	script   string // detection script; "" when detection is null
}

const securityIDs = `{"urgency": {}, "severity": {}, "disposition": {}, "true_positive": {}, "credential_compromise": {}}`

var batchCases = []batchCase{
	{`{"state": "I was charged twice for my order, please refund it."}`, "english", "English Latin text", "", "latin"},
	// Keys ignored: the value alone is Portuguese (preciso, com, minha: pt 3, en 0);
	// read as text with its key, "of the ... from the" makes it en 4 > pt 3 and English.
	{`{"state": {"subject of the message from the customer": "Bom dia, preciso de ajuda com a minha conta"}}`,
		"multilingual", "Latin script but language looks like 'pt', not English", "", "latin"},
	// A leaf inside six lists is at depth 6 and read (de: der/die/den/..., "den", "sie" ...); inside seven it is not.
	{`{"state": [[[[[["Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag"]]]]]]}`,
		"multilingual", "Latin script but language looks like 'de', not English", "", "latin"},
	{`{"state": [[[[[[["Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag"]]]]]]]}`,
		"english", "no letters detected in state; using default (english)", "", "unknown"},
	{`{"state": {"a": {"b": {"c": {"d": {"e": {"f": "Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag"}}}}}}}`,
		"multilingual", "Latin script but language looks like 'de', not English", "", "latin"},
	{`{"state": {"a": 1, "b": true, "c": null, "d": [2.5, false]}}`, "english", "no letters detected in state; using default (english)", "", "unknown"},
	{`{"state": null}`, "english", "no letters detected in state; using default (english)", "", "unknown"},
	{`{"state": ""}`, "english", "no letters detected in state; using default (english)", "", "unknown"},
	{`{"state": {}}`, "english", "no letters detected in state; using default (english)", "", "unknown"},
	{`{"args": {"model": "ml"}}`, "multilingual", "explicit model='ml'", "", ""},
	{`{"state": "x", "args": {"model": " English "}}`, "english", "explicit model=' English '", "", ""},
	{`{"state": "x", "args": {"model": "TYPED"}}`, "typed-decisions", "explicit model='TYPED'", "", ""},
	{`{"state": "x", "args": {"model": ""}}`, "", "unknown model", "", ""}, // normalise_name('') raises
	{`{"state": "x", "args": {"task": "typed-decisions"}}`, "typed-decisions", "explicit task='typed-decisions'", "", ""},
	{`{"state": "x", "args": {"task": "Typed_Decisions"}}`, "typed-decisions", "explicit task='Typed_Decisions'", "", ""},
	{`{"state": "x", "args": {"task": "multi"}}`, "multilingual", "explicit task='multi'", "", ""},
	{`{"state": "x", "args": {"task": "summarise"}}`, "", "unknown model", "", ""},
	{`{"state": "x", "args": {"model": "en", "task": "typed"}}`, "english", "explicit model='en'", "", ""},
	{`{"state": "hello", "args": {"auto_task_detection": true, "questions": ` + securityIDs + `}}`,
		"typed-decisions", "question ids match the 'security_incidents' typed-decisions workflow", "security_incidents", ""},
	// Without the opt-in the workflow is still reported, on the detection decision.
	{`{"state": "I was charged twice for my order, please refund it.", "args": {"questions": ` + securityIDs + `}}`,
		"english", "English Latin text", "security_incidents", "latin"},
	{`{"state": "hi", "args": {"auto_task_detection": 1, "questions": ["action", "category", "churn_risk", "needs_human", "urgency"]}}`,
		"typed-decisions", "question ids match the 'customer_service' typed-decisions workflow", "customer_service", ""},
	// One id too many is no workflow.
	{`{"state": "hi", "args": {"auto_task_detection": true, "questions": ["action", "category", "churn_risk", "needs_human", "urgency", "x"]}}`,
		"english", "Latin script, language not identified and no non-English letters; using default (english)", "", "latin"},
	{`{"state": "hello there", "args": {"lang": "de_DE.UTF-8"}}`, "multilingual", "explicit lang='de_DE.UTF-8'", "", ""},
	{`{"state": "Mein Konto wurde zweimal belastet", "args": {"lang": "EN"}}`, "english", "explicit lang='EN'", "", ""},
	{`{"state": "I was charged twice for my order, please refund it.", "args": {"lang": "  "}}`, "english", "English Latin text", "", "latin"},
	{`{"state": "hi", "args": {"lang_guess": "pt"}}`, "multilingual", "lang_guess: the caller identified this as non-English text", "", ""},
	{`{"state": "hi", "args": {"lang": 123}}`, "", "args.lang: must be a string, got int", "", ""},
	{`{"state": "hi", "args": {"lang_guess": ["pt"]}}`, "", "args.lang_guess: must be a string, got list", "", ""},
	// Codes that name no language abstain and fall through to detection.
	{`{"state": "Mein Konto wurde zweimal belastet, bitte erstatten Sie mir den Betrag.", "args": {"lang": "C.UTF-8"}}`,
		"multilingual", "Latin script but language looks like 'de', not English", "", "latin"},
	{`{"state": "I was charged twice for my order, please refund it.", "args": {"lang": "und", "lang_guess": "zxx"}}`,
		"english", "English Latin text", "", "latin"},
	{`{"state": "", "args": {"default": "multilingual"}}`, "multilingual", "no letters detected in state; using default (multilingual)", "", "unknown"},
	{`{"state": "", "args": {"default": "gpt"}}`, "", "unknown model", "", ""},
	{`{"state": "x", "args": {"model": null, "task": null, "lang": null, "default": null, "auto_task_detection": null, "questions": null}}`,
		"english", "Latin script, language not identified and no non-English letters; using default (english)", "", "latin"},
	{`{"state": `, "", "Expecting value: line 1 column 11 (char 10)", "", ""},
	{`{"state": "x", "args": {"modle": "en"}}`, "", `unknown field "modle"`, "", ""},
	{`{"state": "x", "args": []}`, "", "args: want an object", "", ""},
	{`[1, 2]`, "", "got list", "", ""},
	{`{"state": "x", "extra": 1}`, "", `unknown field "extra"`, "", ""},
	{`{"state": "我的订单还没有到"}`, "multilingual", "non-Latin script (han, 100% of letters); the English checkpoint cannot read it", "", "han"},
}

func TestRouteBatch(t *testing.T) {
	var in strings.Builder
	for i, c := range batchCases {
		in.WriteString(c.line + "\n")
		if i == 3 {
			in.WriteString("\n   \n") // blank lines are skipped
		}
	}
	var out, errOut bytes.Buffer
	batchErr := runRoute(context.Background(), []string{"--batch"}, strings.NewReader(in.String()), &out, &errOut)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != len(batchCases) {
		t.Fatalf("%d output lines for %d requests:\n%s", len(lines), len(batchCases), out.String())
	}
	failures := 0
	for i, c := range batchCases {
		got, err := pyjson.Parse([]byte(lines[i]))
		if err != nil {
			t.Errorf("line %d: output is not JSON: %v: %s", i+1, err, lines[i])
			continue
		}
		field := func(k string) pyjson.Value { v, _ := got.Get(k); return v }
		if c.model == "" {
			failures++
			if e := field("error"); e.Kind() != pyjson.StringKind || !strings.Contains(e.Str(), c.reason) || len(got.Members()) != 1 {
				t.Errorf("line %d %s: got %s, want an error mentioning %q", i+1, c.line, lines[i], c.reason)
			}
			continue
		}
		if m, r := field("model").Str(), field("reason").Str(); m != c.model || r != c.reason {
			t.Errorf("line %d %s:\n got %s / %q\nwant %s / %q", i+1, c.line, m, r, c.model, c.reason)
		}
		if w := field("workflow"); (c.workflow == "" && w.Kind() != pyjson.NullKind) || (c.workflow != "" && w.Str() != c.workflow) {
			t.Errorf("line %d: workflow %s, want %q", i+1, w, c.workflow)
		}
		det := field("detection")
		if c.script == "" {
			if det.Kind() != pyjson.NullKind {
				t.Errorf("line %d: detection %s, want null", i+1, det)
			}
		} else if s, _ := det.Get("script"); s.Str() != c.script {
			t.Errorf("line %d: detection %s, want script %q", i+1, det, c.script)
		}
		keys := []string{}
		for _, m := range got.Members() {
			keys = append(keys, m.Key)
		}
		if strings.Join(keys, ",") != "model,repo,reason,detection,workflow" {
			t.Errorf("line %d: keys %v", i+1, keys)
		}
	}
	// Every line is written, and then the failed ones fail the run.
	if want := fmt.Sprintf("%d of %d lines could not be routed", failures, len(batchCases)); failures == 0 ||
		batchErr == nil || !strings.Contains(batchErr.Error(), want) {
		t.Errorf("err %v, want one saying %q", batchErr, want)
	}
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), []string{"route", "--batch"}, strings.NewReader(in.String()), &out, &errOut); code != 1 ||
		!strings.HasPrefix(errOut.String(), "laya route: ") || strings.Count(errOut.String(), "\n") != 1 {
		t.Errorf("laya route --batch with failed lines: exit %d, stderr %q; want 1 and one line", code, errOut.String())
	}
	// Without a failed line the exit status is 0.
	errOut.Reset()
	ok := batchCases[0].line + "\n" + batchCases[1].line + "\n"
	if code := run(context.Background(), []string{"route", "--batch"}, strings.NewReader(ok), &out, &errOut); code != 0 {
		t.Errorf("laya route --batch: exit %d (%s), want 0", code, errOut.String())
	}
}

// TestRouteBatchMatchesRoute: a batch line and the same request through
// `laya route` flags print the same decision, byte for byte.
func TestRouteBatchMatchesRoute(t *testing.T) {
	dir := t.TempDir()
	qfile := filepath.Join(dir, "q.json")
	os.WriteFile(qfile, []byte(securityIDs), 0o644)
	for _, tc := range []struct {
		line string
		args []string
	}{
		{`{"state": "Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag."}`,
			[]string{"--state", "Mein Konto wurde zweimal belastet, bitte erstatten Sie den Betrag."}},
		{`{"state": {"body": "Olá, não consigo acessar minha conta"}, "args": {"default": "ml"}}`,
			[]string{"--state", `{"body": "Olá, não consigo acessar minha conta"}`, "--default", "ml"}},
		{`{"state": "hello", "args": {"auto_task_detection": true, "questions": ` + securityIDs + `}}`,
			[]string{"--state", "hello", "--auto-task", "--questions", qfile}},
		{`{"state": "", "args": {"lang": "pt-BR"}}`, []string{"--state", "", "--lang", "pt-BR"}},
	} {
		var viaBatch, viaFlags, errOut bytes.Buffer
		if err := runRoute(context.Background(), []string{"--batch", "-"}, strings.NewReader(tc.line+"\n"), &viaBatch, &errOut); err != nil {
			t.Fatal(err)
		}
		if err := runRoute(context.Background(), tc.args, nil, &viaFlags, &errOut); err != nil {
			t.Fatal(err)
		}
		if viaBatch.String() != viaFlags.String() {
			t.Errorf("%s:\n batch %s flags %s", tc.line, viaBatch.String(), viaFlags.String())
		}
	}
}

// TestRouteBatchFlagsAreDefaults: command-line flags apply to every line,
// and a line's args override them.
func TestRouteBatchFlagsAreDefaults(t *testing.T) {
	in := `{"state": ""}` + "\n" + `{"state": "", "args": {"default": "english"}}` + "\n" + `{"state": "x", "args": {"model": "typed"}}` + "\n"
	var out, errOut bytes.Buffer
	if err := runRoute(context.Background(), []string{"--batch", "--default", "ml", "--repos", "mlx"}, strings.NewReader(in), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		`"model": "multilingual", "repo": "aac6fef/laya-multilingual-mlx", "reason": "no letters detected in state; using default (multilingual)"`,
		`"model": "english", "repo": "aac6fef/laya-mlx", "reason": "no letters detected in state; using default (english)"`,
		`"model": "typed-decisions", "repo": "aac6fef/laya-typed-decisions-mlx", "reason": "explicit model='typed'"`,
	} {
		lines := strings.Split(out.String(), "\n")
		if i >= len(lines) || !strings.Contains(lines[i], want) {
			t.Errorf("line %d: %q lacks %s", i+1, lines, want)
		}
	}
	// A bad flag fails before any line is read.
	if err := runRoute(context.Background(), []string{"--batch", "--default", "gpt"}, strings.NewReader(in), &out, &errOut); err == nil || !strings.Contains(err.Error(), "unknown model") {
		t.Errorf("--default gpt: %v", err)
	}
}

// TestRouteBatchLongLines: a line over --max-line-bytes is an error line, the
// lines after it are still routed, and it is not kept in memory whole.
func TestRouteBatchLongLines(t *testing.T) {
	long := `{"state": "` + strings.Repeat("a", 300_000) + `"}`
	in := `{"state": "I was charged twice for my order, please refund it."}` + "\n" + long + "\n" + `{"args": {"model": "ml"}}` + "\r\n" + long
	var out, errOut bytes.Buffer
	if err := runRoute(context.Background(), []string{"--batch", "--max-line-bytes", "1000"}, strings.NewReader(in), &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "2 of 4 lines") {
		t.Errorf("err %v, want the two long lines counted", err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines: %s", len(lines), out.String())
	}
	for i, want := range []string{`"reason": "English Latin text"`, `{"error": "line 2: longer than --max-line-bytes 1000"}`,
		`"reason": "explicit model='ml'"`, `{"error": "line 4: longer than --max-line-bytes 1000"}`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %s, want %s", i+1, lines[i], want)
		}
	}
	// The same input with the default limit routes the long lines.
	out.Reset()
	if err := runRoute(context.Background(), []string{"--batch"}, strings.NewReader(in), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "error") {
		t.Errorf("default limit: %s", out.String())
	}
	lr := newLineReader(strings.NewReader(long+"\n"+"ok\n"), 1000)
	if _, tooLong, err := lr.next(); err != nil || !tooLong || cap(lr.buf) > 64<<10 {
		t.Errorf("long line: tooLong %v, err %v, buffer grew to %d bytes", tooLong, err, cap(lr.buf))
	}
	if line, tooLong, err := lr.next(); err != nil || tooLong || string(line) != "ok" {
		t.Errorf("line after a long one: %q %v %v", line, tooLong, err)
	}
}

// TestRouteBatchFile reads a file argument, and a missing one is an error.
func TestRouteBatchFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "requests.jsonl")
	os.WriteFile(path, []byte(`{"state": "我的订单还没有到"}`), 0o644) // no final newline
	var out, errOut bytes.Buffer
	if err := runRoute(context.Background(), []string{"--batch", path}, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"script": "han"`) || strings.Count(out.String(), "\n") != 1 {
		t.Errorf("file input: %q", out.String())
	}
	// Flags may follow the file name.
	out.Reset()
	os.WriteFile(path, []byte(`{"state": ""}`+"\n"), 0o644)
	if err := runRoute(context.Background(), []string{"--batch", path, "--default", "ml"}, nil, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "using default (multilingual)") {
		t.Errorf("flags after the file: %q", out.String())
	}
	if err := runRoute(context.Background(), []string{"--batch", path + ".missing"}, nil, &out, &errOut); err == nil {
		t.Error("missing file: no error")
	}
	if err := runRoute(context.Background(), []string{"--batch", path, path}, nil, &out, &errOut); err == nil {
		t.Error("two files: no error")
	}
}

// TestRouteHelpExample runs the --batch example of laya route -h as printed.
func TestRouteHelpExample(t *testing.T) {
	in := `{"state": {"subject": "Refund", "body": "Bonjour, je voudrais un remboursement"}}` + "\n" + `{"state": "hello", "args": {"model": "ml"}}` + "\n"
	if !strings.Contains(routeUsage, `'{"state": {"subject": "Refund", "body": "Bonjour, je voudrais un remboursement"}}'`) ||
		!strings.Contains(routeUsage, `'{"state": "hello", "args": {"model": "ml"}}'`) {
		t.Fatal("the help example changed; update this test with it")
	}
	var out, errOut bytes.Buffer
	if err := runRoute(context.Background(), []string{"--batch"}, strings.NewReader(in), &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `looks like 'fr'`) || !strings.Contains(out.String(), `explicit model='ml'`) {
		t.Errorf("help example output: %s", out.String())
	}
}
