package metal

import (
	"sort"
	"sync"
)

// ledger records every Objective-C object the system device owns. purego
// gives no ARC: an object from new*/alloc/copy, or one we retained, leaks
// unless it is sent release exactly once. Each owner releases its object
// through the ledger; Close releases whatever is left, newest first, so an
// encoder goes before its command buffer and pipelines before the device.
// The ledger is plain Go over uintptr handles so that it is tested on any
// OS; the darwin code passes a release function that sends -release.
type ledger struct {
	release func(handle uintptr)

	mu    sync.Mutex
	seq   uint64
	owned map[uintptr]ledgerEntry
}

type ledgerEntry struct {
	seq  uint64
	what string // for leak reports: "buffer", "pipeline softmax", ...
}

func newLedger(release func(uintptr)) *ledger {
	return &ledger{release: release, owned: map[uintptr]ledgerEntry{}}
}

// add takes ownership of handle. A zero handle is ignored.
func (l *ledger) add(handle uintptr, what string) {
	if handle == 0 {
		return
	}
	l.mu.Lock()
	l.seq++
	l.owned[handle] = ledgerEntry{seq: l.seq, what: what}
	l.mu.Unlock()
}

// drop releases handle if the ledger still owns it and reports whether it
// did; a second drop of the same handle is a no-op.
func (l *ledger) drop(handle uintptr) bool {
	l.mu.Lock()
	_, ok := l.owned[handle]
	delete(l.owned, handle)
	l.mu.Unlock()
	if ok {
		l.release(handle)
	}
	return ok
}

// dropAll releases every owned object, newest first, and returns what it
// released in that order.
func (l *ledger) dropAll() []string {
	l.mu.Lock()
	type item struct {
		handle uintptr
		ledgerEntry
	}
	items := make([]item, 0, len(l.owned))
	for h, e := range l.owned {
		items = append(items, item{h, e})
	}
	l.owned = map[uintptr]ledgerEntry{}
	l.mu.Unlock()
	sort.Slice(items, func(i, j int) bool { return items[i].seq > items[j].seq })
	released := make([]string, len(items))
	for i, it := range items {
		l.release(it.handle)
		released[i] = it.what
	}
	return released
}

// len reports how many objects the ledger owns.
func (l *ledger) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.owned)
}
