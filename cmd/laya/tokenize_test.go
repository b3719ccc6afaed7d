package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

func TestRunTokenize(t *testing.T) {
	// Expected ids come from the Hugging Face goldens next to the tokenizer.
	var golden struct {
		Cases []struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		} `json:"cases"`
	}
	data, err := os.ReadFile("../../testdata/tokenizers/modernbert/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	var in bytes.Buffer
	var want [][]int
	var texts []string
	for i, c := range golden.Cases {
		if strings.ContainsAny(c.Text, "\r\n") || i > 200 {
			continue
		}
		if i%2 == 0 {
			b, _ := json.Marshal(map[string]string{"text": c.Text, "id": "x"})
			in.Write(b)
		} else {
			in.WriteString(c.Text)
		}
		in.WriteString("\n")
		want = append(want, c.IDs)
		texts = append(texts, c.Text)
	}
	// A JSON line may carry any text, newlines included.
	in.WriteString(`{"text": "tabs\tand\nnewlines\r\n"}` + "\n")
	want = append(want, []int{33754, 186, 395, 187, 1826, 8737, 2379})
	texts = append(texts, "tabs\tand\nnewlines\r\n")

	tests := []struct {
		name string
		args []string
	}{
		{"tokenizer", []string{"--tokenizer", "../../testdata/tokenizers/modernbert/tokenizer.json"}},
		{"model", []string{"--model", "../../testdata/oracle/checkpoints/real-en"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := runTokenize(context.Background(), tt.args, bytes.NewReader(in.Bytes()), &out, &errOut); err != nil {
				t.Fatalf("%v\n%s", err, errOut.String())
			}
			lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(lines) != len(want) {
				t.Fatalf("%d output lines, want %d", len(lines), len(want))
			}
			for i, line := range lines {
				var got struct {
					Text string `json:"text"`
					IDs  []int  `json:"ids"`
				}
				if err := json.Unmarshal([]byte(line), &got); err != nil {
					t.Fatalf("line %d: %v: %s", i+1, err, line)
				}
				if got.Text != texts[i] || !slices.Equal(got.IDs, want[i]) && len(want[i])+len(got.IDs) > 0 {
					t.Errorf("line %d: got %q %v, want %q %v", i+1, got.Text, got.IDs, texts[i], want[i])
				}
			}
		})
	}
}

func TestRunTokenizeSpecialAndErrors(t *testing.T) {
	var out bytes.Buffer
	err := runTokenize(context.Background(),
		[]string{"--model", "../../testdata/oracle/checkpoints/tiny-ml/tokenizer", "--special"},
		strings.NewReader("hello world\n<b>&\n"), &out, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	// From testdata/oracle/goldens/tiny-ml/tokenizer.json, with_special_tokens.
	if first := strings.SplitN(out.String(), "\n", 2)[0]; first != `{"text":"hello world","ids":[2,672,532,321,408,398,469,1]}` {
		t.Errorf("first line = %s", first)
	}
	if !strings.Contains(out.String(), `"text":"<b>&"`) {
		t.Errorf("output HTML-escaped: %s", out.String())
	}
	for _, args := range [][]string{
		{},
		{"--tokenizer", "x.json", "--model", "dir"},
		{"--tokenizer", "does-not-exist.json"},
	} {
		if err := runTokenize(context.Background(), args, strings.NewReader("x\n"), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("runTokenize(%q) succeeded", args)
		}
	}
	out.Reset()
	err = runTokenize(context.Background(), []string{"--tokenizer", "../../testdata/tokenizers/modernbert/tokenizer.json"},
		strings.NewReader(`{"txt": "x"}`), &out, &bytes.Buffer{})
	if err != nil || !strings.HasPrefix(out.String(), `{"text":"{\"txt\": \"x\"}","ids":[`) {
		t.Errorf("JSON line without text: err = %v, out = %s", err, out.String())
	}
}
