package laya

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
	"github.com/laya-metal/laya/tokenizer"
)

// TestBoundedStateMatchesFull holds the bounded encoder to the full tokenization on long
// texts, objects and conversations for both tokenizers: the tokens it keeps are the full
// encoding's first (or, for a list, last) tokens, and more than a row can hold when it
// says the state is incomplete.
func TestBoundedStateMatchesFull(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"refund", "invoice", "Rückerstattung", "今日", "please", "<mask>", "[MASK]", "\n", "  ", "don't", "42.5", "é", "🙂", "\t", "x"}
	text := func(n int) string {
		var b strings.Builder
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			if rng.IntN(3) > 0 {
				b.WriteByte(' ')
			}
		}
		return b.String()
	}
	type encoder struct {
		name string
		b    sequenceBuilder
	}
	var encoders []encoder
	for _, ckpt := range []string{"real-en", "tiny-ml"} {
		agent, err := Load(ctx, checkpointDir(ckpt))
		if err != nil {
			t.Fatal(err)
		}
		defer agent.Close()
		encoders = append(encoders, encoder{ckpt, agent.builder})
	}
	// Tokenizers of other families: ModernBERT's own, SentencePiece-style Metaspace,
	// Split pre-tokenizers (Llama's among them).
	files, _ := filepath.Glob("testdata/tokenizers/generated/synth-*.tokenizer.json")
	for _, f := range append(files, "testdata/tokenizers/modernbert/tokenizer.json") {
		tok, err := tokenizer.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		encoders = append(encoders, encoder{filepath.Base(f), sequenceBuilder{enc: tok, sp: specialTokens{MaskToken: "[MASK]"}, maxLen: 160}})
	}
	for _, e := range encoders {
		ckpt, b := e.name, e.b
		for i := range 24 {
			size := []int{50, 600, 5000, 40000}[i%4]
			var s State
			switch i % 3 {
			case 0:
				s = Text(text(size))
			case 1:
				s = ValueState(pyjson.Object(pyjson.Member{Key: "subject", Value: pyjson.String(text(40))}, pyjson.Member{Key: "n", Value: pyjson.Float(1.5)}, pyjson.Member{Key: "body", Value: pyjson.String(text(size))}, pyjson.Member{Key: "tags", Value: pyjson.Array(pyjson.String("a"), pyjson.Null())}))
			default:
				var turns []Value
				for range 1 + size/200 {
					turns = append(turns, pyjson.Object(pyjson.Member{Key: "role", Value: pyjson.String("user")}, pyjson.Member{Key: "text", Value: pyjson.String(text(200))}))
				}
				turns = append(turns, pyjson.String(text(size)))
				s = ValueState(pyjson.Array(turns...))
			}
			want := b.enc.Encode(b.scrubMask(s.Serialize()))
			for _, maxLen := range []int{b.maxLen, 8, 512} {
				enc := b.encodeStateBounded(s, maxLen)
				name := fmt.Sprintf("%s case %d size %d max_len %d", ckpt, i, size, maxLen)
				switch {
				case enc.Complete:
					if !slices.Equal(enc.IDs, want) {
						t.Errorf("%s: complete encoding differs from the full one", name)
					}
				case len(enc.IDs) <= maxLen:
					t.Errorf("%s: incomplete with %d tokens, want more than %d", name, len(enc.IDs), maxLen)
				case enc.Left && !slices.Equal(enc.IDs, want[len(want)-len(enc.IDs):]):
					t.Errorf("%s: suffix differs from the full encoding's last %d tokens", name, len(enc.IDs))
				case !enc.Left && !slices.Equal(enc.IDs, want[:len(enc.IDs)]):
					t.Errorf("%s: prefix differs from the full encoding's first %d tokens", name, len(enc.IDs))
				}
			}
			for _, limit := range []int{0, 1, 7, 100, 3000} {
				full := s.Serialize()
				if s.isList() {
					got, complete := serializeSuffix(s, limit)
					if !strings.HasSuffix(full, got) || complete != (got == full) {
						t.Errorf("case %d: serializeSuffix(%d) = %d bytes, complete %v; not a suffix of the %d-byte whole", i, limit, len(got), complete, len(full))
					}
				} else {
					got, complete := serializePrefix(s, limit)
					if !strings.HasPrefix(full, got) || complete != (got == full) || len(got) > max(limit, 0) && !complete {
						t.Errorf("case %d: serializePrefix(%d) = %d bytes, complete %v; not a prefix of the %d-byte whole", i, limit, len(got), complete, len(full))
					}
				}
			}
		}
	}
}

// TestLargeStateMemory predicts on a 2 MiB state and bounds the bytes allocated during
// the call, which bound the heap it adds at its peak: tokenizing the whole state before
// truncating it took 360 MB of RSS for a 7.4 MB state.
func TestLargeStateMemory(t *testing.T) {
	ctx := context.Background()
	agent, err := Load(ctx, checkpointDir("real-en"))
	if err != nil {
		t.Fatal(err)
	}
	defer agent.Close()
	body := strings.Repeat("I was billed twice for March on invoice 4411, please refund it. ", (2<<20)/64)
	states := map[string]State{
		"text":   Text(body),
		"object": ValueState(pyjson.Object(pyjson.Member{Key: "subject", Value: pyjson.String("refund")}, pyjson.Member{Key: "body", Value: pyjson.String(body)})),
		"list":   ValueState(pyjson.Array(pyjson.String("hi"), pyjson.String(body))),
	}
	qs := Questions{{ID: "refund", Definition: NoulQuestion("Does the customer ask for money back?")}}
	for name, s := range states {
		if _, err := agent.Predict(ctx, s, qs); err != nil { // warm caches
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if _, err := agent.Predict(ctx, s, qs); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		allocated := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s state of %d bytes: %d bytes allocated", name, len(body), allocated)
		if allocated > 64<<20 {
			t.Errorf("%s state: %d MB allocated during Predict, want ≤ 64 MB", name, allocated>>20)
		}
	}
}
