package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
)

// parityTolerance is how far apart two answers' numbers may be: upstream's
// parity rule for fp32 (calibrated probabilities within 1e-4, laya-spec
// "Validation methodology"), plus one unit of the 4 decimals an answer is
// printed with. Everything else (choices, labels, token counts) must be
// equal.
const parityTolerance = 2e-4

// parityFiles compares two laya predict outputs and prints one line.
func parityFiles(w io.Writer, wantPath, gotPath string) error {
	want, err := os.ReadFile(wantPath)
	if err != nil {
		return err
	}
	got, err := os.ReadFile(gotPath)
	if err != nil {
		return err
	}
	name := filepath.Base(gotPath)
	n, worst, err := parity(want, got)
	if err != nil {
		fmt.Fprintf(w, "parity %s: MISMATCH: %v\n", name, err)
		return fmt.Errorf("parity %s: %w", name, err)
	}
	fmt.Fprintf(w, "parity %s: ok: %d numbers, largest difference %.2g (tolerance %.0e)\n", name, n, worst, parityTolerance)
	return nil
}

// parity compares two answers as JSON: it returns how many numbers it
// compared and the largest difference, or where they disagree.
func parity(want, got []byte) (numbers int, worst float64, err error) {
	var a, b any
	if err := decodeJSON(want, &a); err != nil {
		return 0, 0, fmt.Errorf("first answer: %w", err)
	}
	if err := decodeJSON(got, &b); err != nil {
		return 0, 0, fmt.Errorf("second answer: %w", err)
	}
	c := &comparison{}
	c.compare("$", a, b)
	return c.numbers, c.worst, c.err
}

func decodeJSON(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	return d.Decode(v)
}

type comparison struct {
	numbers int
	worst   float64
	err     error
}

func (c *comparison) compare(path string, a, b any) {
	if c.err != nil {
		return
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			c.err = fmt.Errorf("%s: an object against %s", path, jsonText(b))
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for k := range y {
			if _, ok := x[k]; !ok {
				c.err = fmt.Errorf("%s: key %q only in the second", path, k)
				return
			}
		}
		for _, k := range keys {
			v, ok := y[k]
			if !ok {
				c.err = fmt.Errorf("%s: key %q only in the first", path, k)
				return
			}
			c.compare(path+"."+k, x[k], v)
		}
	case []any:
		y, ok := b.([]any)
		if !ok || len(y) != len(x) {
			c.err = fmt.Errorf("%s: %s against %s", path, jsonText(a), jsonText(b))
			return
		}
		for i := range x {
			c.compare(path+"["+strconv.Itoa(i)+"]", x[i], y[i])
		}
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			c.err = fmt.Errorf("%s: %s against %s", path, x, jsonText(b))
			return
		}
		fa, err1 := x.Float64()
		fb, err2 := y.Float64()
		d := math.Abs(fa - fb)
		if err1 != nil || err2 != nil || !(d <= parityTolerance) {
			c.err = fmt.Errorf("%s: %s against %s (difference %.3g > %.0e)", path, x, y, d, parityTolerance)
			return
		}
		c.numbers++
		c.worst = max(c.worst, d)
	default:
		if jsonText(a) != jsonText(b) {
			c.err = fmt.Errorf("%s: %s against %s", path, jsonText(a), jsonText(b))
		}
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 60 {
		b = append(slices.Clip(b[:57]), "..."...)
	}
	return string(b)
}
