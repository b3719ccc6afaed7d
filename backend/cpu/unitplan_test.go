package cpu

import (
	"fmt"
	"testing"
)

// TestUnitPlan checks forEachGemmUnit's numbering: every (row, column) of
// the GEMM in exactly one non-empty unit, the split tail's first halves a
// multiple of the micro-kernel's block rows wide, and the tail split only
// with more than one worker.
func TestUnitPlan(t *testing.T) {
	for _, c := range []struct{ m, cols, panel, unitM, workers int }{
		{93, 1024, 128, 93, 2}, {862, 3072, 128, 862, 2}, {862, 1024, 64, 432, 16},
		{1, 1, 128, 1, 2}, {5, 9, 64, 5, 2}, {100, 17, 16, 48, 4}, {862, 2624, 64, 862, 16},
		{93, 1024, 128, 93, 1}, {200, 300, 64, 96, 3}, {48, 8, 16, 48, 2},
	} {
		t.Run(fmt.Sprintf("%dx%d/p%d/u%d/w%d", c.m, c.cols, c.panel, c.unitM, c.workers), func(t *testing.T) {
			p := newUnitPlan(c.m, c.cols, c.panel, c.unitM, c.workers)
			if c.workers == 1 && p.tail != 0 {
				t.Fatalf("one worker, %d tail units", p.tail)
			}
			seen := make([]int, c.m*c.cols)
			for u := range p.units() {
				n0, n1, mu0, mu1 := p.unit(u)
				if n0 == n1 {
					continue
				}
				if n0 > n1 || mu0 >= mu1 || n1 > c.cols || mu1 > c.m || n1-n0 > c.panel {
					t.Fatalf("unit %d: columns [%d, %d), rows [%d, %d)", u, n0, n1, mu0, mu1)
				}
				if u >= p.whole && (u-p.whole)%2 == 0 && (n1-n0)%outerMR != 0 && n1 != min(n0/c.panel*c.panel+c.panel, c.cols) {
					t.Errorf("unit %d: first half [%d, %d) not a multiple of %d", u, n0, n1, outerMR)
				}
				for r := mu0; r < mu1; r++ {
					for j := n0; j < n1; j++ {
						seen[r*c.cols+j]++
					}
				}
			}
			for i, n := range seen {
				if n != 1 {
					t.Fatalf("row %d column %d in %d units", i/c.cols, i%c.cols, n)
				}
			}
		})
	}
}
