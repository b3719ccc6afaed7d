package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/router"
)

// defaultMaxBatchLine bounds one --batch line: the request is parsed whole,
// so this is what one line may cost in memory (upstream's server takes
// bodies of at most 2 MiB).
const defaultMaxBatchLine = 4 << 20

// batchDefaults are the flag values a batch line's args override.
type batchDefaults struct {
	questions laya.Questions
	opts      router.RouteOptions
	config    routerConfig
}

// routeBatch routes every JSON line of in and writes one decision, or one
// {"error": ...}, per line to out, in input order. Lines are read one at a
// time, so memory is bounded by maxLine whatever the input's length. A line
// that cannot be routed does not stop the others, but makes the whole run
// fail (with an error counting such lines) once every line is written, so
// that a script sees it in the exit status.
func routeBatch(ctx context.Context, in io.Reader, out io.Writer, routers *routerSet, defaults batchDefaults, maxLine int) error {
	lines := newLineReader(in, maxLine)
	w := bufio.NewWriter(out)
	var total, failed int
	for lineNo := 1; ; lineNo++ {
		if err := ctx.Err(); err != nil {
			w.Flush()
			return err
		}
		line, tooLong, err := lines.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			w.Flush()
			return fmt.Errorf("reading line %d: %w", lineNo, err)
		}
		if !tooLong && len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		total++
		var result laya.Value
		if tooLong {
			err = fmt.Errorf("longer than --max-line-bytes %d", maxLine)
		} else {
			result, err = routeLine(line, routers, defaults)
		}
		if err != nil {
			failed++
			result = pyjson.Object(pyjson.Member{Key: "error", Value: pyjson.String(fmt.Sprintf("line %d: %v", lineNo, err))})
		}
		w.WriteString(result.String())
		w.WriteByte('\n')
		// Each answer goes out as soon as it is known, so a pipe sees
		// results while the input is still being written.
		if err := w.Flush(); err != nil {
			return err
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d lines could not be routed (their output lines hold the errors)", failed, total)
	}
	return nil
}

// routeLine routes one request line {"state": ..., "args": {...}}.
func routeLine(line []byte, routers *routerSet, defaults batchDefaults) (laya.Value, error) {
	v, err := pyjson.Parse(line)
	if err != nil {
		return laya.Value{}, err
	}
	if v.Kind() != pyjson.ObjectKind {
		return laya.Value{}, fmt.Errorf(`want an object {"state": ..., "args": {...}}, got %s`, pyjson.TypeName(v))
	}
	for _, m := range v.Members() {
		if m.Key != "state" && m.Key != "args" {
			return laya.Value{}, fmt.Errorf(`unknown field %q; a line has "state" and "args"`, m.Key)
		}
	}
	stateValue, _ := v.Get("state") // absent is null, as upstream's body.get("state")
	state := laya.ValueState(stateValue)
	args, _ := v.Get("args")
	req, err := parseRouteArgs(args, defaults)
	if err != nil {
		return laya.Value{}, err
	}
	r, err := routers.get(req.config)
	if err != nil {
		return laya.Value{}, err
	}
	d, err := r.Route(state, req.questions, req.opts)
	if err != nil {
		return laya.Value{}, err
	}
	return d.Value(), nil
}

// parseRouteArgs reads a line's args: the keyword arguments of upstream's
// Router(default=..., auto_task_detection=...) and Router.route(questions,
// model=..., task=..., lang=..., lang_guess=...). null means "not given", as
// Python's None does there; other values are read as upstream reads them
// (str() of a model, task or lang; the truth value of auto_task_detection).
func parseRouteArgs(args laya.Value, defaults batchDefaults) (batchDefaults, error) {
	req := defaults
	switch args.Kind() {
	case pyjson.NullKind:
		return req, nil
	case pyjson.ObjectKind:
	default:
		return req, fmt.Errorf("args: want an object, got %s", pyjson.TypeName(args))
	}
	for _, m := range args.Members() {
		v := m.Value
		if v.Kind() == pyjson.NullKind {
			continue
		}
		switch m.Key {
		case "model", "task":
			// Upstream passes any given value to normalise_name, so an empty
			// one is an unknown model there, not an absent one.
			name := pyjson.Str(v)
			if strings.TrimSpace(name) == "" {
				_, err := router.NormalizeModelName(name)
				return req, fmt.Errorf("args.%s: %w", m.Key, err)
			}
			if m.Key == "model" {
				req.opts.Model = name
			} else {
				req.opts.Task = name
			}
		case "lang", "lang_guess":
			// Refused as laya serve refuses it: str(123) would name no language
			// yet route as one.
			if v.Kind() != pyjson.StringKind {
				return req, fmt.Errorf("args.%s: must be a string, got %s", m.Key, pyjson.TypeName(v))
			}
			code := v.Str()
			if m.Key == "lang" {
				req.opts.Lang = code // a blank code falls through to detection
			} else {
				req.opts.LangGuess = func(laya.State) string { return code }
			}
		case "default":
			name := pyjson.Str(v)
			if _, err := router.NormalizeModelName(name); err != nil {
				return req, fmt.Errorf("args.default: %w", err)
			}
			req.config.defaultModel = name
		case "auto_task_detection":
			req.config.autoTask = pythonTruth(v)
		case "questions":
			qs, err := routeQuestionIDs(v)
			if err != nil {
				return req, err
			}
			req.questions = qs
		default:
			return req, fmt.Errorf("args: unknown field %q; use model, task, lang, lang_guess, default, auto_task_detection or questions", m.Key)
		}
	}
	return req, nil
}

// routeQuestionIDs reads the questions of a batch line. Routing reads only
// their ids (upstream's set(questions)), so definitions are not validated
// here; a list of ids is accepted as set() of it would be.
func routeQuestionIDs(v laya.Value) (laya.Questions, error) {
	switch v.Kind() {
	case pyjson.ObjectKind:
		qs := make(laya.Questions, len(v.Members()))
		for i, m := range v.Members() {
			qs[i] = laya.Question{ID: m.Key, Definition: m.Value}
		}
		return qs, nil
	case pyjson.ArrayKind:
		qs := make(laya.Questions, len(v.Items()))
		for i, it := range v.Items() {
			if it.Kind() != pyjson.StringKind {
				return nil, fmt.Errorf("args.questions[%d]: a question id must be a string, got %s", i, pyjson.TypeName(it))
			}
			qs[i] = laya.Question{ID: it.Str()}
		}
		return qs, nil
	}
	return nil, fmt.Errorf("args.questions: want an object of question id -> definition, got %s", pyjson.TypeName(v))
}

// pythonTruth is bool(x) of the value json.loads makes of v.
func pythonTruth(v laya.Value) bool {
	switch v.Kind() {
	case pyjson.BoolKind:
		return v.Bool()
	case pyjson.NumberKind:
		return v.Float64() != 0 // NaN is true, as in Python
	case pyjson.StringKind:
		return v.Str() != ""
	case pyjson.ArrayKind:
		return len(v.Items()) > 0
	case pyjson.ObjectKind:
		return len(v.Members()) > 0
	}
	return false
}

// lineReader yields the lines of r one at a time. A line longer than max
// bytes is reported as too long and skipped to its end without being kept.
type lineReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline (and a trailing \r), or
// io.EOF after the last one. The slice is valid until the next call.
func (l *lineReader) next() (line []byte, tooLong bool, err error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.r.ReadSlice('\n')
		if !tooLong {
			if len(l.buf)+len(chunk) > l.max+2 { // room for "\r\n"
				tooLong, l.buf = true, l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(chunk) == 0 && len(l.buf) == 0 && !tooLong {
				return nil, false, io.EOF
			}
		case err != nil:
			return nil, false, err
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(l.buf, []byte("\n")), []byte("\r"))
		if !tooLong && len(line) > l.max {
			tooLong = true
		}
		return line, tooLong, nil
	}
}
