//go:build linux

package cuda

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/laya-metal/laya/backend"
	"github.com/laya-metal/laya/internal/half"
)

// A tune file's line reads back as the entry it was written from, for
// every field at the edges of its range; a line cut short, with a field
// out of range or not a number, reads as nothing.
func TestTuneLineRoundTrip(t *testing.T) {
	entries := []tuneEntry{
		{ltKey{m: 93, n: 3072, k: 1024, ld: 1024, typ: cudaR16F, dtyp: cudaR32F, batch: 1, epilogue: ltEpilogueDefault,
			align: [4]uint32{256, 256, 256, 256}}, ltAlgo{1, 2, 3, 4, 5, 6, 7, 1<<64 - 1}},
		{ltKey{m: 4237, n: 1024, k: 2624, ld: 2624, typ: cudaR16F, dtyp: cudaR16F, batch: 2, strideA: 0, strideB: -2624,
			strideD: 4237 * 1024, epilogue: 1<<32 - 1, accumulate: true, align: [4]uint32{2, 4, 8, 16}}, ltAlgo{0, 0, 0, 0, 0, 0, 0, 0}},
		{ltKey{m: 1<<31 - 1, n: 1, k: 1, ld: 1, batch: 1, strideA: math.MinInt64, strideD: math.MaxInt64}, ltAlgo{0xdeadbeef}},
	}
	for _, e := range entries {
		line := formatTuneLine(e)
		got, err := parseTuneLine(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if got != e {
			t.Errorf("%q read back as %+v, want %+v", line, got, e)
		}
	}
	good := strings.Fields(formatTuneLine(entries[0]))
	for name, mutate := range map[string]func(f []string) []string{
		"short":                  func(f []string) []string { return f[:len(f)-1] },
		"long":                   func(f []string) []string { return append(f, "0") },
		"zero rows":              func(f []string) []string { f[0] = "0"; return f },
		"rows past int32":        func(f []string) []string { f[0] = "2147483648"; return f },
		"negative type":          func(f []string) []string { f[4] = "-1"; return f },
		"accumulate 2":           func(f []string) []string { f[11] = "2"; return f },
		"alignment past 32 bits": func(f []string) []string { f[12] = "4294967296"; return f },
		"algorithm not hex":      func(f []string) []string { f[16] = "xyz"; return f },
		"size not a number":      func(f []string) []string { f[1] = "3e3"; return f },
	} {
		f := mutate(append([]string(nil), good...))
		if e, err := parseTuneLine(strings.Join(f, " ")); err == nil {
			t.Errorf("%s: %q read as %+v", name, strings.Join(f, " "), e)
		}
	}
}

// What one Open timed, the next Open with the same tune cache takes
// without timing (its kept shapes counted, its picks the first's); a
// shape it had not met is timed and added. A damaged file, or one whose
// algorithm the heuristic does not offer for its shape, costs only the
// timing; tunecache=off keeps no file.
func TestEmuTuneCache(t *testing.T) {
	dir := t.TempDir()
	const k, n = 64, 48
	values := lcgValues(11)
	w := values(n*k, 1.0/8)
	h16 := func(v float32) float64 { return float64(half.Float16ToFloat32(half.Float32ToFloat16(v))) }

	// run opens a backend on cache, runs a Linear of each of rows and
	// returns its counters and picks by rows (checking every product).
	run := func(t *testing.T, cache string, rows ...int) (Stats, map[int]ltAlgo) {
		t.Helper()
		opts := emuOptions(t)
		opts.Precision, opts.NoGraphs, opts.NoSmallLinear, opts.TuneCache = FP16, true, true, cache
		bi, err := Open(opts)
		if err != nil {
			t.Fatal(err)
		}
		defer bi.Close()
		b := bi.(*Backend)
		W, err := bi.Upload("w", backend.F32, n, k, unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 4*len(w)))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range rows {
			x := values(m*k, 1)
			s := bi.NewStream()
			y := s.New(m, n)
			s.Linear(y, s.FromHost(m, k, x), W, nil, backend.Identity)
			got := make([]float32, m*n)
			if err := s.Read(context.Background(), y, got); err != nil {
				t.Fatal(err)
			}
			s.Close()
			for r := range m {
				for col := range n {
					want, mag := 0.0, 0.0
					for j := range k {
						v := h16(x[r*k+j]) * h16(w[col*k+j])
						want += v
						mag += math.Abs(v)
					}
					if d := math.Abs(float64(got[r*n+col]) - want); !(d <= 8*k*0x1p-24*mag+1e-5) {
						t.Fatalf("%d rows: output (%d, %d) is %v, want %v", m, r, col, got[r*n+col], want)
					}
				}
			}
		}
		picks := map[int]ltAlgo{}
		b.lt.mu.Lock()
		for key, p := range b.lt.plans {
			if key.n == n && key.k == k && p.tuned {
				if len(p.cands) < 2 {
					t.Fatalf("%d rows: the heuristic offered %d candidates; the test needs a choice", key.m, len(p.cands))
				}
				picks[key.m] = p.cands[p.pick].algo
			}
		}
		b.lt.mu.Unlock()
		return b.Stats(), picks
	}
	files := func() []string {
		t.Helper()
		paths, err := filepath.Glob(filepath.Join(dir, "*.tune"))
		if err != nil {
			t.Fatal(err)
		}
		return paths
	}
	lines := func(path string) int {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n") - 1 // the header
	}

	st, first := run(t, dir, 200, 40)
	if st.GEMMTuned != 2 || st.GEMMTuneKept != 0 {
		t.Fatalf("first Open: %d shapes tuned, %d kept; want 2 and 0", st.GEMMTuned, st.GEMMTuneKept)
	}
	paths := files()
	if len(paths) != 1 || lines(paths[0]) != 2 {
		t.Fatalf("after the first Open: tune files %v, want one of two lines", paths)
	}
	path := paths[0]

	st, second := run(t, dir, 40, 200, 300)
	if st.GEMMTuned != 1 || st.GEMMTuneKept != 2 {
		t.Fatalf("second Open: %d shapes tuned, %d kept; want 1 (300 rows) and 2", st.GEMMTuned, st.GEMMTuneKept)
	}
	for _, m := range []int{40, 200} {
		if second[m] != first[m] {
			t.Errorf("%d rows: the second Open took another algorithm than the first timed", m)
		}
	}
	if got := lines(path); got != 3 {
		t.Fatalf("after the second Open: %d lines, want 3", got)
	}

	// Every kept algorithm replaced by one no heuristic offers: timed again.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if i > 0 {
			f := strings.Fields(l)
			for j := 16; j < len(f); j++ {
				f[j] = "7777"
			}
			l = strings.Join(f, " ")
		}
		out = append(out, l)
	}
	if err := os.WriteFile(path, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := run(t, dir, 40, 200); st.GEMMTuned != 2 || st.GEMMTuneKept != 0 {
		t.Errorf("algorithms not offered: %d shapes tuned, %d kept; want 2 and 0", st.GEMMTuned, st.GEMMTuneKept)
	}

	// A damaged file: timed again, and replaced by a good one.
	if err := os.WriteFile(path, []byte("not a tune file\x00\xff"), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := run(t, dir, 40); st.GEMMTuned != 1 || st.GEMMTuneKept != 0 {
		t.Errorf("damaged file: %d shapes tuned, %d kept; want 1 and 0", st.GEMMTuned, st.GEMMTuneKept)
	}
	if st, _ := run(t, dir, 40); st.GEMMTuned != 0 || st.GEMMTuneKept != 1 {
		t.Errorf("after the damaged file was replaced: %d shapes tuned, %d kept; want 0 and 1", st.GEMMTuned, st.GEMMTuneKept)
	}

	// Files of other libraries, GPUs or settings, older: the write keeps
	// this one and the most recent others, keptTuneFiles in all.
	old := time.Now().Add(-time.Hour)
	for i := range keptTuneFiles + 2 {
		p := filepath.Join(dir, fmt.Sprintf("other%02d.tune", i))
		if err := os.WriteFile(p, []byte(tuneFileVersion+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute))
	}
	if st, _ := run(t, dir, 500); st.GEMMTuned != 1 {
		t.Fatalf("a new shape: %d tuned, want 1", st.GEMMTuned)
	}
	if paths := files(); len(paths) != keptTuneFiles || !slices.Contains(paths, path) {
		t.Errorf("after a write beside %d older tune files: %d left (this one kept: %v), want %d", keptTuneFiles+2, len(paths), slices.Contains(paths, path), keptTuneFiles)
	}

	off := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", off) // where a default cache would go
	for range 2 {
		if st, _ := run(t, "off", 40); st.GEMMTuned != 1 || st.GEMMTuneKept != 0 {
			t.Errorf("tunecache=off: %d shapes tuned, %d kept; want 1 and 0", st.GEMMTuned, st.GEMMTuneKept)
		}
	}
	if paths, _ := filepath.Glob(filepath.Join(off, "*", "*", "*.tune")); len(paths) != 0 {
		t.Errorf("tunecache=off wrote %v", paths)
	}
}
