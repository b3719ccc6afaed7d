package lang

import (
	"strings"
	"testing"

	"github.com/laya-metal/laya/pyjson"
)

// hostileStates are structured states far larger than the field scan's
// budget, each shaped to cost the most per byte in its own way.
func hostileStates() []struct {
	name  string
	state pyjson.Value
} {
	// Every state opens with more English than the whole-state and segment
	// scans read, so that it reads as English until the field scan runs.
	english := pyjson.String(strings.Repeat("The invoice was charged twice and we would like a refund. ", 80))
	many := func(n int, s string) pyjson.Value {
		items := make([]pyjson.Value, n)
		for i := range items {
			items[i] = pyjson.String(s)
		}
		return pyjson.Object(pyjson.Member{Key: "note", Value: english}, pyjson.Member{Key: "items", Value: pyjson.Array(items...)})
	}
	return []struct {
		name  string
		state pyjson.Value
	}{
		{"empty strings", many(100000, "")},
		{"short English", many(100000, "please see the attached log")},
		{"short French", many(100000, "le la les des une est pour nous")},
		{"long French", many(100, strings.Repeat("le la les des une est pour nous ", 125))},
		{"one endless line", many(2, strings.Repeat("the box arrived damaged and late ", 300000))},
		{"endless blank lines", many(1, strings.Repeat("\n", 10<<20))},
		{"short lines", many(1, strings.Repeat("été été\n", 1<<20))},
	}
}

// The field scan reads no more than its budget of any structured state,
// counted on what it hands to the line analysis, not on its own accounting.
func TestFieldScanBounded(t *testing.T) {
	defer func() { onFieldLine = nil }()
	for _, tc := range hostileStates() {
		lines, cost, size := 0, 0, 0
		collect(tc.state, 0, func(leaf string) bool { size += len(leaf) + fieldLineCost; return true })
		onFieldLine = func(line string) { lines++; cost += len(line) + fieldLineCost }
		Analyze(tc.state)
		if lines == 0 {
			t.Errorf("%s: the field scan read nothing", tc.name)
		}
		if cost > fieldScanBudget+fieldLineCost {
			t.Errorf("%s: the field scan read %d lines costing %d, budget %d", tc.name, lines, cost, fieldScanBudget)
		}
		if size <= fieldScanBudget {
			t.Errorf("%s: state costs %d, not past the budget %d", tc.name, size, fieldScanBudget)
		}
	}
}

// What the budget reaches is read as before: a message ahead of a flood of
// other values is found as it is on its own; one behind the budget is not read.
func TestFieldScanReadsWhatItReaches(t *testing.T) {
	german := pyjson.String("Ich kann mich nicht anmelden, bitte helfen Sie mir.")
	filler := make([]pyjson.Value, 5000)
	for i := range filler {
		filler[i] = pyjson.String("please see the attached log")
	}
	alone := scanFields(pyjson.Object(pyjson.Member{Key: "message", Value: german}), fieldScanBudget)
	if alone == nil || alone.Language != "de" {
		t.Fatalf("the message alone: %+v, want German", alone)
	}
	first := scanFields(pyjson.Object(
		pyjson.Member{Key: "message", Value: german},
		pyjson.Member{Key: "log", Value: pyjson.Array(filler...)}), fieldScanBudget)
	if first == nil || first.Language != alone.Language || first.Script != alone.Script {
		t.Errorf("message ahead of the flood: %+v, want %+v", first, alone)
	}
	last := scanFields(pyjson.Object(
		pyjson.Member{Key: "log", Value: pyjson.Array(filler...)},
		pyjson.Member{Key: "message", Value: german}), fieldScanBudget)
	if last != nil {
		t.Errorf("message behind the budget was read: %+v", last)
	}
	// Within the budget it is read wherever it stands.
	if got := scanFields(pyjson.Object(
		pyjson.Member{Key: "log", Value: pyjson.Array(filler[:1000]...)},
		pyjson.Member{Key: "message", Value: german}), fieldScanBudget); got == nil || got.Language != "de" {
		t.Errorf("message behind 1000 values: %+v, want German", got)
	}
}

// BenchmarkAnalyzeHostile is the cost of one Analyze of each hostile state.
func BenchmarkAnalyzeHostile(b *testing.B) {
	for _, tc := range hostileStates() {
		b.Run(strings.ReplaceAll(tc.name, " ", "-"), func(b *testing.B) {
			for b.Loop() {
				Analyze(tc.state)
			}
		})
	}
}
