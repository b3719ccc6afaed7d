package laya

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/tokenizer"
)

// goldenBuilder is the sequence builder for a golden checkpoint: its real tokenizer and
// the max_len/head_max_len upstream ran with.
func goldenBuilder(t *testing.T, name string) sequenceBuilder {
	t.Helper()
	tok, sp, err := tokenizer.LoadDir(filepath.Join("testdata", "oracle", "checkpoints", name, "tokenizer"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	cfg := mustGet(mustGet(readRequestGolden(t, name, "cases.json"), "load"), "cfg")
	return sequenceBuilder{
		enc:        tok,
		sp:         specialTokens{CLS: sp.CLS, SEP: sp.SEP, MASK: sp.MASK, MaskToken: sp.MaskToken},
		maxLen:     int(mustGet(cfg, "max_len").Float64()),
		headMaxLen: int(mustGet(cfg, "head_max_len").Float64()),
	}
}

// TestSequenceGoldens rebuilds every golden row from the request: the full state ids,
// each row's input_ids, markers, length, prefix_length, option stats, bucket and
// temperature.
func TestSequenceGoldens(t *testing.T) {
	for _, name := range requestCheckpoints {
		b := goldenBuilder(t, name)
		temps := goldenTemperatures(t, name)
		a := &Agent{builder: b, temps: temps}
		for _, c := range loadRequestCases(t, name) {
			where := name + "/" + c.name
			qs, err := questionsFromValue(mustGet(c.request, "questions"))
			if err != nil {
				t.Fatal(err)
			}
			prepared, err := prepareQuestions(qs)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			state := ValueState(mustGet(c.request, "state"))
			stateIDs, left := b.encodeState(state)
			if !slices.Equal(stateIDs, c.stateIDs) || left != c.truncateLeft {
				t.Errorf("%s: state ids (left=%v)\n got %v\nwant %v", where, left, stateIDs, c.stateIDs)
			}
			rows, _, err := buildRows(&a.builder, state, prepared, false)
			if err != nil {
				t.Fatalf("%s: %v", where, err)
			}
			for i, r := range rows {
				g := c.rows[i]
				w := where + "/" + g.qid
				if !slices.Equal(r.IDs, g.inputIDs) {
					t.Errorf("%s: input_ids\n got %v\nwant %v", w, r.IDs, g.inputIDs)
				}
				if !slices.Equal(r.Markers, g.markers) || len(r.IDs) != g.length || r.PrefixLength != g.prefixLength {
					t.Errorf("%s: markers %v len %d prefix %d, want %v %d %d", w, r.Markers, len(r.IDs), r.PrefixLength, g.markers, g.length, g.prefixLength)
				}
				if r.Options != g.options {
					t.Errorf("%s: option stats %+v, want %+v", w, r.Options, g.options)
				}
				temp, bucket := temps.For(r.QType, len(r.Markers))
				if bucket != g.bucket || temp != g.temperature {
					t.Errorf("%s: bucket %s T %v, want %s %v", w, bucket, temp, g.bucket, g.temperature)
				}
			}
		}
	}
}

// TestTooManyOptionsGolden checks errors.json's too_many_options: the options overflow
// max_len, which only tokenizing reveals.
func TestTooManyOptionsGolden(t *testing.T) {
	for _, name := range requestCheckpoints {
		a := &Agent{builder: goldenBuilder(t, name)}
		for _, c := range mustGet(readRequestGolden(t, name, "errors.json"), "cases").Items() {
			if mustGet(c, "name").Str() != "too_many_options" {
				continue
			}
			req := mustGet(c, "request")
			qs, _ := questionsFromValue(mustGet(req, "questions"))
			prepared, err := prepareQuestions(qs)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = buildRows(&a.builder, ValueState(mustGet(req, "state")), prepared, false)
			want := mustGet(c, "message").Str()
			if err == nil || err.Error() != want {
				t.Errorf("%s: err %v, want %q", name, err, want)
			}
			if !errors.Is(err, ErrTooManyOptions) || !errors.Is(err, ErrInvalidQuestion) {
				t.Errorf("%s: %v does not match ErrTooManyOptions and ErrInvalidQuestion", name, err)
			}
		}
	}
}

// charEncoder is a stand-in tokenizer: one id per byte, so budgets are easy to reason about.
type charEncoder struct{}

func (charEncoder) Encode(s string) []int {
	ids := make([]int, len(s))
	for i := range len(s) {
		ids[i] = int(s[i])
	}
	return ids
}

// TestBuildRules checks build_sequence's budget and truncation rules on a byte tokenizer
// (ids 1000+ are specials). Expected layouts are worked out from upstream's code.
func TestBuildRules(t *testing.T) {
	const cls, sep, mask = 1001, 1002, 1004
	b := sequenceBuilder{enc: charEncoder{}, sp: specialTokens{CLS: cls, SEP: sep, MASK: mask, MaskToken: "<m>"}}
	noul := &question{qtype: heads.Noul, instructions: "q<m>", options: []string{"n", "y"}}

	t.Run("layout", func(t *testing.T) {
		b.maxLen, b.headMaxLen = 64, 40
		r := b.build(noul, []int{'s', 't'}, false)
		// "noul question: q " is 17 bytes (the mask literal became a space).
		want := []int{cls}
		want = append(want, charEncoder{}.Encode("noul question: q ")...)
		want = append(want, sep, mask, ' ', 'n', mask, ' ', 'y', sep, 's', 't', sep)
		if !slices.Equal(r.IDs, want) || !slices.Equal(r.Markers, []int{19, 22}) || r.PrefixLength != 26 {
			t.Errorf("got %v markers %v prefix %d", r.IDs, r.Markers, r.PrefixLength)
		}
	})
	t.Run("right truncation keeps the head", func(t *testing.T) {
		b.maxLen, b.headMaxLen = 30, 40
		r := b.build(noul, []int{'a', 'b', 'c', 'd', 'e', 'f'}, false)
		// prefix 26, room = 30 − 26 − 1 = 3.
		if got := r.IDs[26:]; !slices.Equal(got, []int{'a', 'b', 'c', sep}) {
			t.Errorf("state part %v", got)
		}
	})
	t.Run("left truncation keeps the tail", func(t *testing.T) {
		r := b.build(noul, []int{'a', 'b', 'c', 'd', 'e', 'f'}, true)
		if got := r.IDs[26:]; !slices.Equal(got, []int{'d', 'e', 'f', sep}) {
			t.Errorf("state part %v", got)
		}
	})
	t.Run("no room keeps no state", func(t *testing.T) {
		b.maxLen = 27 // room = 0: the new form st[len:] is empty, not the whole state
		for _, left := range []bool{false, true} {
			r := b.build(noul, []int{'a', 'b'}, left)
			if !slices.Equal(r.IDs[26:], []int{sep}) {
				t.Errorf("left=%v: state part %v", left, r.IDs[26:])
			}
		}
	})
	t.Run("prefix past max_len drops markers", func(t *testing.T) {
		b.maxLen = 21 // the second marker (22) is cut
		r := b.build(noul, nil, false)
		if len(r.IDs) != 21 || !slices.Equal(r.Markers, []int{19}) {
			t.Errorf("ids %d markers %v", len(r.IDs), r.Markers)
		}
	})
	t.Run("squeeze", func(t *testing.T) {
		b.maxLen, b.headMaxLen = 200, 30
		q := &question{qtype: heads.Choice, instructions: "pick one of these please",
			options: []string{"alpha beta", "alpha bet", "gamma"}}
		r := b.build(q, nil, false)
		// Options are 11, 10 and 6 tokens: budget 30 − 27 = 3 < 16, so per = max(4, 14/3) = 4:
		// [MASK] " alp" twice (collapsed) and [MASK] " gam"; the instruction keeps
		// max(8, 30 − 12) = 18 of its "choice question: …" tokens.
		if r.Options != (optionStats{Options: 3, Distinct: 2, TokensPerOption: 4}) {
			t.Errorf("stats %+v", r.Options)
		}
		if !slices.Equal(r.Markers, []int{20, 24, 28}) {
			t.Errorf("markers %v", r.Markers)
		}
	})
	t.Run("option text capped at 48 tokens", func(t *testing.T) {
		b.maxLen, b.headMaxLen = 400, 300
		long := make([]byte, 100)
		for i := range long {
			long[i] = 'x'
		}
		q := &question{qtype: heads.Choice, instructions: "i", options: []string{string(long), "b"}}
		r := b.build(q, nil, false)
		if r.Markers[1]-r.Markers[0] != 49 {
			t.Errorf("first option spans %d tokens, want 49 ([MASK] + 48)", r.Markers[1]-r.Markers[0])
		}
	})
}

// countingEncoder is charEncoder that counts the texts it was asked for.
type countingEncoder struct {
	mu    sync.Mutex
	calls map[string]int
}

func (e *countingEncoder) Encode(s string) []int {
	e.mu.Lock()
	e.calls[s]++
	e.mu.Unlock()
	return charEncoder{}.Encode(s)
}

// The encode cache gives the tokenizer's ids, asks the tokenizer once per
// short text, passes long texts through, hands out copies, and stays
// within its bound.
func TestEncodeCache(t *testing.T) {
	enc := &countingEncoder{calls: map[string]int{}}
	c := newEncodeCache(enc)
	long := strings.Repeat("x", encodeCacheText+1)
	for range 3 {
		for _, s := range []string{"", " yes", "choice question: pick one", long} {
			if got, want := c.Encode(s), (charEncoder{}).Encode(s); !slices.Equal(got, want) {
				t.Fatalf("Encode(%.20q) = %v, want %v", s, got, want)
			}
		}
	}
	if n := enc.calls[" yes"]; n != 1 {
		t.Errorf("a short text was tokenized %d times, want once", n)
	}
	if n := enc.calls[long]; n != 3 {
		t.Errorf("a text over %d bytes was tokenized %d times, want every time (3)", encodeCacheText, n)
	}
	ids := c.Encode(" yes")
	ids[0] = -1
	if got := c.Encode(" yes"); got[0] != ' ' {
		t.Errorf("changing a returned slice changed the cache: %v", got)
	}
	for i := range 2*encodeCacheEntries + 10 {
		c.Encode(strconv.Itoa(i))
	}
	if n := len(c.ids); n > encodeCacheEntries {
		t.Errorf("the cache holds %d texts, bound %d", n, encodeCacheEntries)
	}
}

// Requests on many goroutines share one agent's cache (run with -race).
func TestEncodeCacheConcurrent(t *testing.T) {
	c := newEncodeCache(charEncoder{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 * encodeCacheEntries / 2 {
				s := strconv.Itoa((i * (g + 1)) % 5000)
				if got := c.Encode(s); !slices.Equal(got, charEncoder{}.Encode(s)) {
					t.Errorf("Encode(%q) = %v", s, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// The prefix cache gives what building the prefix gives, for questions that
// differ only where a careless key would not tell them apart (the type,
// head_max_len, an option holding a separator); asks the tokenizer nothing
// the second time; hands out prefixes that building rows on them does not
// change; passes long keys through; and stays within its bound.
func TestPrefixCache(t *testing.T) {
	const cls, sep, mask = 1001, 1002, 1004
	enc := &countingEncoder{calls: map[string]int{}}
	b := sequenceBuilder{enc: enc, prefixes: newPrefixCache(), sp: specialTokens{CLS: cls, SEP: sep, MASK: mask, MaskToken: "<m>"}, maxLen: 64}
	qs := []*question{
		{qtype: heads.Choice, instructions: "pick<m>", options: []string{"a\x00b"}},
		{qtype: heads.Choice, instructions: "pick<m>", options: []string{"a", "b"}},
		{qtype: heads.Choice, instructions: "pick<m>\x01\x01a", options: []string{"b"}},
		{qtype: heads.Score, instructions: "pick<m>", options: []string{"a", "b"}},
		{qtype: heads.Noul, instructions: "is it", options: []string{"no", "yes"}},
		{qtype: heads.Choice, instructions: "long options", options: []string{strings.Repeat("x", 60), strings.Repeat("x", 61), "y"}},
	}
	for _, headMax := range []int{40, 12} {
		b.headMaxLen = headMax
		for round := range 2 {
			before := len(enc.calls)
			for _, q := range qs {
				want := b.newPrefix(q)
				got := b.prefix(q)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("head_max_len %d, %q %q: cached prefix %+v, built %+v", headMax, q.instructions, q.options, got, want)
				}
				r := b.withState(got, []int{'s', 't'}, false)
				r.IDs[0], r.Markers[0] = -1, -1
				if again := b.prefix(q); !reflect.DeepEqual(again, want) {
					t.Fatalf("a row built on the cached prefix changed it: %+v, want %+v", again, want)
				}
			}
			if round == 1 {
				// newPrefix asks again for its own comparison; prefix must not
				// have added texts of its own.
				if n := len(enc.calls); n != before {
					t.Errorf("head_max_len %d: the second round tokenized %d new texts", headMax, n-before)
				}
			}
		}
	}
	n := len(b.prefixes.m)
	long := &question{qtype: heads.Noul, instructions: strings.Repeat("z", prefixCacheKey), options: []string{"no", "yes"}}
	if got, want := b.prefix(long), b.newPrefix(long); !reflect.DeepEqual(got, want) || len(b.prefixes.m) != n {
		t.Errorf("a key over %d bytes: cached %d entries (had %d), prefix equal %v", prefixCacheKey, len(b.prefixes.m), n, reflect.DeepEqual(got, want))
	}
	for i := range 2*prefixCacheEntries + 10 {
		b.prefix(&question{qtype: heads.Noul, instructions: strconv.Itoa(i), options: []string{"no", "yes"}})
	}
	if n := len(b.prefixes.m); n > prefixCacheEntries {
		t.Errorf("the cache holds %d prefixes, bound %d", n, prefixCacheEntries)
	}
	// Long prefixes (a request's head_max_len) fill it by size first.
	b.headMaxLen = 4000
	cleared := false
	for i := range 700 {
		before := len(b.prefixes.m)
		b.prefix(&question{qtype: heads.Choice, instructions: strconv.Itoa(i) + strings.Repeat("i", 1900), options: []string{"o", "p"}})
		cleared = cleared || len(b.prefixes.m) < before
		held := 0
		for k, p := range b.prefixes.m {
			held += len(k) + len(p.ids) + len(p.markers)
		}
		if held != b.prefixes.size || held > prefixCacheSize {
			t.Fatalf("the cache holds %d key bytes and ids (counted %d), bound %d", held, b.prefixes.size, prefixCacheSize)
		}
	}
	if !cleared {
		t.Error("700 prefixes of about 4000 key bytes and ids never filled the cache")
	}
}

// Requests on many goroutines share one agent's prefix cache (run with
// -race): each gets the prefix built alone, and the cache's count of what
// it holds stays exact.
func TestPrefixCacheConcurrent(t *testing.T) {
	const cls, sep, mask = 1001, 1002, 1004
	b := sequenceBuilder{enc: charEncoder{}, prefixes: newPrefixCache(), sp: specialTokens{CLS: cls, SEP: sep, MASK: mask, MaskToken: "<m>"},
		maxLen: 64, headMaxLen: 40}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 3 * prefixCacheEntries / 2 {
				q := &question{qtype: heads.Noul, instructions: strconv.Itoa((i * (g + 1)) % 2000), options: []string{"no", "yes"}}
				if got, want := b.prefix(q), b.newPrefix(q); !reflect.DeepEqual(got, want) {
					t.Errorf("prefix(%q) = %+v, want %+v", q.instructions, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	held := 0
	for k, p := range b.prefixes.m {
		held += len(k) + len(p.ids) + len(p.markers)
	}
	if held != b.prefixes.size {
		t.Errorf("the cache holds %d key bytes and ids, counted %d", held, b.prefixes.size)
	}
}
