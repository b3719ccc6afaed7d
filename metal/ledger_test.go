package metal

import (
	"slices"
	"sync"
	"testing"
)

func TestLedgerReleasesExactlyOnce(t *testing.T) {
	var mu sync.Mutex
	released := map[uintptr]int{}
	var order []uintptr
	l := newLedger(func(h uintptr) {
		mu.Lock()
		released[h]++
		order = append(order, h)
		mu.Unlock()
	})
	l.add(0, "nil object") // ignored
	for h := uintptr(1); h <= 5; h++ {
		l.add(h*16, "object")
	}
	if l.len() != 5 {
		t.Fatalf("len = %d, want 5", l.len())
	}
	if !l.drop(32) || l.drop(32) {
		t.Error("drop(32) should release once, then be a no-op")
	}
	if l.drop(999) {
		t.Error("drop of a handle never added reported a release")
	}
	whats := l.dropAll()
	if len(whats) != 4 {
		t.Errorf("dropAll released %d objects, want 4", len(whats))
	}
	// Newest first: encoders before command buffers, pipelines before the device.
	if want := []uintptr{32, 80, 64, 48, 16}; !slices.Equal(order, want) {
		t.Errorf("release order %v, want %v", order, want)
	}
	for h, n := range released {
		if n != 1 {
			t.Errorf("handle %d released %d times", h, n)
		}
	}
	if again := l.dropAll(); len(again) != 0 || l.len() != 0 {
		t.Error("second dropAll released something")
	}
}

func TestLedgerConcurrentDrop(t *testing.T) {
	var mu sync.Mutex
	count := map[uintptr]int{}
	l := newLedger(func(h uintptr) { mu.Lock(); count[h]++; mu.Unlock() })
	for h := uintptr(1); h <= 100; h++ {
		l.add(h, "buffer")
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := uintptr(1); h <= 100; h++ {
				l.drop(h)
			}
		}()
	}
	wg.Wait()
	l.dropAll()
	for h := uintptr(1); h <= 100; h++ {
		if count[h] != 1 {
			t.Fatalf("handle %d released %d times", h, count[h])
		}
	}
}
