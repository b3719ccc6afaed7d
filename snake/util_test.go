package snake

import "strings"

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// compact drops the spaces JSON encoders put after ':' and ','.
func compact(s string) string {
	s = strings.ReplaceAll(s, `": `, `":`)
	return strings.ReplaceAll(s, `, "`, `,"`)
}
