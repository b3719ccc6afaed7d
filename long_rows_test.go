package laya

import (
	"context"
	"reflect"
	"strings"
	"testing"
)

// PredictLong builds each window's row from a prefix tokenized once per
// question and reused: no window may change it, so every row must equal the
// row a fresh prefix gives (build). What the rows hold is held to upstream's
// goldens by long_test.go; this test guards the reuse.
func TestPrefixRowsMatchBuild(t *testing.T) {
	ctx := context.Background()
	many := make([]string, 40)
	for i := range many {
		many[i] = strings.Repeat("option ", 1+i%5) + string(rune('a'+i%26))
	}
	qs := append(longQuestions(), Question{ID: "crowded", Definition: ChoiceQuestion("Which one [MASK] fits?", many...)})
	for _, name := range []string{"tiny-en", "tiny-ml"} {
		agent, err := Load(ctx, checkpointDir(name))
		if err != nil {
			t.Fatal(err)
		}
		ids := agent.tok.Encode(longText(40))
		for _, lim := range []struct{ maxLen, headMaxLen int }{
			{agent.builder.maxLen, agent.builder.headMaxLen},
			{96, 40},  // squeezed options, markers past max_len
			{300, 24}, // question cut to its floor
		} {
			b := agent.builder
			b.maxLen, b.headMaxLen = lim.maxLen, lim.headMaxLen
			for _, left := range []bool{false, true} {
				for _, q := range qs {
					iq := toInternal(q.ID, q.Definition)
					p := b.prefix(iq)
					room := max(0, b.maxLen-b.withState(p, nil, left).PrefixLength-1)
					ws, _ := longWindows(len(ids), room, 5, MaxLongWindows, left)
					for _, w := range append(ws, window{0, 0}, window{0, len(ids)}) {
						state := ids[w.start : w.start+w.n]
						got, want := b.withState(p, state, left), b.build(iq, state, left)
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%s %+v left=%v %s window %+v:\n got %+v\nwant %+v", name, lim, left, q.ID, w, got, want)
						}
					}
				}
			}
		}
		agent.Close()
	}
}

// BenchmarkLongRows builds the rows of a 16-window PredictLong call for three
// questions: from a prefix tokenized once per question (what PredictLong
// does), and with every window tokenizing its question again.
func BenchmarkLongRows(b *testing.B) {
	agent, err := Load(context.Background(), checkpointDir("tiny-en"))
	if err != nil {
		b.Fatal(err)
	}
	defer agent.Close()
	sb := agent.builder
	ids := agent.tok.Encode(longText(400))
	var qs []*question
	for _, q := range longQuestions() {
		qs = append(qs, toInternal(q.ID, q.Definition))
	}
	windows := make([][]window, len(qs))
	for i, q := range qs {
		room := max(0, sb.maxLen-sb.build(q, nil, false).PrefixLength-1)
		windows[i], _ = longWindows(len(ids), room, 0, DefaultMaxWindows, false)
	}
	b.Run("prefix-once", func(b *testing.B) {
		for b.Loop() {
			for i, q := range qs {
				p := sb.prefix(q)
				for _, w := range windows[i] {
					sb.withState(p, ids[w.start:w.start+w.n], false)
				}
			}
		}
	})
	b.Run("per-window", func(b *testing.B) {
		for b.Loop() {
			for i, q := range qs {
				for _, w := range windows[i] {
					sb.build(q, ids[w.start:w.start+w.n], false)
				}
			}
		}
	})
}
