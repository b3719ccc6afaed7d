package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/laya-metal/laya/tokenizer"
)

func init() {
	register("tokenize", command{
		summary: "encode text to token ids with a Hugging Face tokenizer.json",
		run:     runTokenize,
	})
}

const tokenizeUsage = `Usage: laya tokenize (--tokenizer FILE | --model DIR) [--special] < input

Reads one text per line from stdin: a JSON object with a string "text" field
gives that text (which may hold newlines); any other line is the text itself.
Writes one JSON line {"text": ..., "ids": [...]} per input line, in input
order. The ids equal Python's
tok(text, add_special_tokens=False)["input_ids"]; with --special the
post-processor's special tokens are added (e.g. [CLS] ... [SEP]).

--model accepts a Laya checkpoint directory (using its tokenizer/ folder) or
a folder holding tokenizer.json directly.

Example:
  $ printf 'The capital of France is [MASK].\n{"text": "a  b"}\n' |
      laya tokenize --tokenizer testdata/tokenizers/modernbert/tokenizer.json
  {"text":"The capital of France is [MASK].","ids":[510,5347,273,6181,310,50284,15]}
  {"text":"a  b","ids":[66,50276,67]}

Flags:
`

func runTokenize(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("tokenize", tokenizeUsage, stderr)
	tokPath := fs.String("tokenizer", "", "tokenizer.json `FILE`")
	modelDir := fs.String("model", "", "checkpoint or tokenizer `DIR`")
	special := fs.Bool("special", false, "add the post-processor's special tokens")
	if help, err := parseFlags(fs, args); help || err != nil {
		return err
	}
	if (*tokPath == "") == (*modelDir == "") {
		return usagef("give exactly one of --tokenizer or --model")
	}
	var tok *tokenizer.Tokenizer
	var err error
	if *tokPath != "" {
		tok, err = tokenizer.Load(*tokPath)
	} else {
		dir := *modelDir
		if _, statErr := os.Stat(filepath.Join(dir, "tokenizer.json")); statErr != nil {
			dir = filepath.Join(dir, "tokenizer")
		}
		tok, _, err = tokenizer.LoadDir(dir)
	}
	if err != nil {
		return err
	}

	in := bufio.NewReaderSize(stdin, 1<<16)
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, readErr := in.ReadString('\n')
		if readErr != nil && readErr != io.EOF {
			return fmt.Errorf("stdin: %w", readErr)
		}
		if line == "" && readErr == io.EOF {
			return out.Flush()
		}
		line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
		text := lineText(line)
		ids := tok.Encode(text)
		if *special {
			ids = tok.EncodeWithSpecial(text)
		}
		if ids == nil {
			ids = []int{}
		}
		if err := enc.Encode(struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}{text, ids}); err != nil {
			return err
		}
		if readErr == io.EOF {
			return out.Flush()
		}
	}
}

// lineText returns the text of one input line: the "text" field when the
// line is a JSON object with a string "text", otherwise the line itself (so
// a line such as {"message": "hi"} is tokenized as written).
func lineText(line string) string {
	trimmed := strings.TrimSpace(line)
	if !strings.HasPrefix(trimmed, "{") {
		return line
	}
	var obj struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal([]byte(trimmed), &obj) != nil || obj.Text == nil {
		return line
	}
	return *obj.Text
}
