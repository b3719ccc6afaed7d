//go:build linux

package cuda

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ebitengine/purego"
)

// The GEMMs' timed algorithms are kept on disk between processes, beside
// the kernels' cubins (Options.TuneCache). Each GEMM shape a process meets
// first times the heuristic's candidates (tune): sixteen of them, nine
// launches each, a synchronisation a round. A server meets a new shape for
// each token bucket and row count its passes bring, so a fresh one spends
// its first seconds timing; a restarted one, or each one-shot `laya
// predict`, timed them all again. Kept, a shape's algorithm is taken
// without timing where the heuristic offers that algorithm for the shape
// again: a changed library, GPU or heuristic meets no kept algorithm it
// would not have picked from itself. Answers do not depend on it any more
// than on timing: every candidate computes the same product.
//
// The file is named by a hash of what the algorithms depend on (the
// library, the GPU, the candidates' settings), holds one line a shape and
// is rewritten whole (merged with what another process wrote meanwhile)
// through a temporary file and a rename, a little after new shapes were
// timed and at Close. A file that cannot be read or written only costs the
// timing.

// tuneFileVersion heads a tune file; a file of another format is ignored
// (and replaced).
const tuneFileVersion = "laya-metal cuda gemm tunes v1"

// maxTuneEntries bounds a tune file: a server's shapes are a few hundred
// (token buckets times GEMMs); past this the oldest lines are dropped.
const maxTuneEntries = 16384

// tuneSaveDelay is how long after a newly timed shape the file is written:
// a pass's new shapes, and the next few passes', go in one write.
const tuneSaveDelay = 2 * time.Second

// tuneCache is a backend's kept algorithms and their file.
type tuneCache struct {
	path string

	mu      sync.Mutex
	kept    map[ltKey]ltAlgo
	order   []ltKey // kept's keys, oldest first (the file's order, then this process's)
	dirty   bool
	pending *time.Timer
	closed  bool
}

// tuneCacheDir is the directory Options.TuneCache names: "" the kernel
// cache's (kernelCacheDir of kernelCache), "off" none ("").
func tuneCacheDir(opt, kernelCache string) string {
	switch opt {
	case "off":
		return ""
	case "":
		return kernelCacheDir(kernelCache)
	}
	return opt
}

// openTuneCache reads the tune file of dir named by parts; dir "" keeps
// nothing (nil).
func openTuneCache(dir string, parts ...string) *tuneCache {
	if dir == "" {
		return nil
	}
	c := &tuneCache{path: filepath.Join(dir, cubinKey(append([]string{tuneFileVersion}, parts...)...)+".tune"), kept: map[ltKey]ltAlgo{}}
	c.merge(readTuneFile(c.path))
	return c
}

// lookup returns the algorithm kept for k.
func (c *tuneCache) lookup(k ltKey) (ltAlgo, bool) {
	if c == nil {
		return ltAlgo{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.kept[k]
	return a, ok
}

// add keeps k's timed algorithm and schedules a write.
func (c *tuneCache) add(k ltKey, a ltAlgo) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.kept[k]; ok && old == a {
		return
	}
	c.put(k, a)
	c.dirty = true
	if c.pending == nil && !c.closed {
		c.pending = time.AfterFunc(tuneSaveDelay, func() { c.save() })
	}
}

// put sets k's algorithm; with c.mu held.
func (c *tuneCache) put(k ltKey, a ltAlgo) {
	if _, ok := c.kept[k]; !ok {
		c.order = append(c.order, k)
	}
	c.kept[k] = a
	if over := len(c.order) - maxTuneEntries; over > 0 {
		for _, old := range c.order[:over] {
			delete(c.kept, old)
		}
		c.order = append(c.order[:0], c.order[over:]...)
	}
}

// merge adds what another process kept, where this one has nothing for
// the shape (what this process timed wins: it is the newer).
func (c *tuneCache) merge(entries []tuneEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		if _, ok := c.kept[e.key]; !ok {
			c.put(e.key, e.algo)
		}
	}
}

// save writes the file if anything new was timed: the file's current
// lines (another process's), then this process's.
func (c *tuneCache) save() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.pending = nil
	dirty := c.dirty
	c.dirty = false
	c.mu.Unlock()
	if !dirty {
		return
	}
	disk := readTuneFile(c.path)
	c.mu.Lock()
	mine := make([]tuneEntry, 0, len(c.order))
	for _, k := range c.order {
		mine = append(mine, tuneEntry{k, c.kept[k]})
	}
	c.mu.Unlock()
	seen := make(map[ltKey]bool, len(mine))
	for _, e := range mine {
		seen[e.key] = true
	}
	var all []tuneEntry
	for _, e := range disk {
		if !seen[e.key] {
			all = append(all, e)
		}
	}
	all = append(all, mine...)
	if len(all) > maxTuneEntries {
		all = all[len(all)-maxTuneEntries:]
	}
	writeTuneFile(c.path, all)
}

// close writes what is not yet written and stops later writes.
func (c *tuneCache) close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.closed = true
	if c.pending != nil {
		c.pending.Stop()
	}
	c.mu.Unlock()
	c.save()
}

// tuneEntry is a line of a tune file.
type tuneEntry struct {
	key  ltKey
	algo ltAlgo
}

// maxTuneFileBytes bounds what is read: a file larger than any this code
// writes is not its own.
const maxTuneFileBytes = 4 << 20

// readTuneFile returns path's entries; a missing, foreign or damaged file
// has none, a damaged line is skipped.
func readTuneFile(path string) []tuneEntry {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() > maxTuneFileBytes {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() || sc.Text() != tuneFileVersion {
		return nil
	}
	var out []tuneEntry
	for sc.Scan() {
		if e, err := parseTuneLine(sc.Text()); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// writeTuneFile writes entries to path (writeCached) and prunes the
// directory's older tune files.
func writeTuneFile(path string, entries []tuneEntry) {
	var buf bytes.Buffer
	buf.WriteString(tuneFileVersion + "\n")
	for _, e := range entries {
		buf.WriteString(formatTuneLine(e))
		buf.WriteByte('\n')
	}
	if writeCached(path, buf.Bytes()) {
		pruneFiles(filepath.Dir(path), ".tune", keptTuneFiles)
	}
}

// tuneLineFields is a line's count of numbers: ltKey's fields (m, n, k,
// ld, typ, dtyp, batch, three strides, epilogue, accumulate, four
// alignments) and the algorithm's eight words.
const tuneLineFields = 16 + len(ltAlgo{})

// formatTuneLine writes e as decimal numbers, then the algorithm's words
// in hex.
func formatTuneLine(e tuneEntry) string {
	k := e.key
	acc := 0
	if k.accumulate {
		acc = 1
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d", k.m, k.n, k.k, k.ld, k.typ, k.dtyp, k.batch,
		k.strideA, k.strideB, k.strideD, k.epilogue, acc, k.align[0], k.align[1], k.align[2], k.align[3])
	for _, w := range e.algo {
		fmt.Fprintf(&sb, " %x", w)
	}
	return sb.String()
}

// parseTuneLine reads a line formatTuneLine wrote.
func parseTuneLine(s string) (tuneEntry, error) {
	f := strings.Fields(s)
	if len(f) != tuneLineFields {
		return tuneEntry{}, fmt.Errorf("%d fields, want %d", len(f), tuneLineFields)
	}
	var n [16]int64
	for i := range n {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return tuneEntry{}, err
		}
		n[i] = v
	}
	for _, i := range []int{0, 1, 2, 3, 6} { // m, n, k, ld, batch
		if n[i] < 1 || n[i] > 1<<31-1 {
			return tuneEntry{}, fmt.Errorf("size %d out of range", n[i])
		}
	}
	if n[11] != 0 && n[11] != 1 {
		return tuneEntry{}, fmt.Errorf("accumulate is %d", n[11])
	}
	u32 := func(v int64) (uint32, error) {
		if v < 0 || v > 1<<32-1 {
			return 0, fmt.Errorf("%d out of range", v)
		}
		return uint32(v), nil
	}
	var e tuneEntry
	k := &e.key
	k.m, k.n, k.k, k.ld, k.batch = int(n[0]), int(n[1]), int(n[2]), int(n[3]), int(n[6])
	k.strideA, k.strideB, k.strideD = n[7], n[8], n[9]
	k.accumulate = n[11] == 1
	var err error
	for _, p := range []struct {
		dst *uint32
		v   int64
	}{{&k.typ, n[4]}, {&k.dtyp, n[5]}, {&k.epilogue, n[10]}, {&k.align[0], n[12]}, {&k.align[1], n[13]}, {&k.align[2], n[14]}, {&k.align[3], n[15]}} {
		if *p.dst, err = u32(p.v); err != nil {
			return tuneEntry{}, err
		}
	}
	for i := range e.algo {
		if e.algo[i], err = strconv.ParseUint(f[16+i], 16, 64); err != nil {
			return tuneEntry{}, err
		}
	}
	return e, nil
}

// tuneCacheParts is what names the backend's tune file: the cuBLASLt
// library (its file, through links, and the version it reports), the GPU
// (its name, architecture and multiprocessors) and the settings that
// choose or time the candidates.
func (b *Backend) tuneCacheParts() []string {
	lib := b.lt.lib
	path := lib.path
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	var version uintptr
	if lib.getVersion != 0 {
		version, _, _ = purego.SyscallN(lib.getVersion)
	}
	o := b.opts
	return []string{path, fmt.Sprint(version), b.gpu, b.arch, fmt.Sprint(b.sms),
		fmt.Sprint("cands=", cmp.Or(o.TuneCandidates, DefaultTuneCandidates)), fmt.Sprint("splitk=", o.SplitK), fmt.Sprint("cold=", o.TuneCold)}
}
