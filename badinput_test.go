package laya

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkParseWideObject parses a request whose state has 100 000 keys: linear
// work (a scan per key made it take minutes).
func BenchmarkParseWideObject(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"state": {`)
	for i := range 100000 {
		if i > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, `"k%d": %d`, i, i)
	}
	sb.WriteString(`}, "questions": {}}`)
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseRequest(data); err != nil {
			b.Fatal(err)
		}
	}
}
