package lang

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/laya-metal/laya/pyjson"
)

// The line and field scan of upstream's analyse (laya/lang.py, 0.3.29): a state
// that reads as English overall can still carry a customer's message in another
// language on one line or in one field, which the longer English part outvotes.

var (
	// codeLine: a line with code syntax (=, ;, braces, brackets, a call name( )
	// is a pasted program, whose identifiers read as foreign words (os.path is
	// Portuguese "os").
	codeLine = regexp.MustCompile(`[=;{}\[\]]|[\p{L}\p{N}_]\(`)
	// joinedToken: a letter or digit, a joiner (. _ / \) and another: an
	// identifier or compound (Nav/Com, OS/2, C:\DOS), dropped whole.
	joinedToken = regexp.MustCompile(`[\p{L}\p{N}][._/\\][\p{L}\p{N}]`)
	// letterRun: Python's [^\W\d_]{2,}.
	letterRun = regexp.MustCompile(`[\p{L}\p{Nl}\p{No}]{2,}`)
)

// An all-caps line must show more than acronym-shaped evidence before its
// language is believed (upstream #1013): a token of shoutedMinWord letters, and
// either non-English diacritics or a matched function word of shoutedMinStopword
// letters. "MON DES EST LA" is a hockey team, a state, a time zone and an
// airport, not French; "OLÁ, PRECISO DE AJUDA" is still Portuguese.
const (
	shoutedMinStopword = 4
	shoutedMinWord     = 5
)

// pyUpper and pyLower are Python's per-character str.isupper and str.islower
// (the Uppercase and Lowercase properties).
func pyUpper(r rune) bool { return unicode.IsUpper(r) || unicode.Is(unicode.Other_Uppercase, r) }
func pyLower(r rune) bool { return unicode.IsLower(r) || unicode.Is(unicode.Other_Lowercase, r) }

// pySpace is Python's str.isspace, which str.split() and str.strip() use.
func pySpace(r rune) bool { return unicode.IsSpace(r) || (0x1c <= r && r <= 0x1f) }

// isUpperString is Python's str.isupper on a whole string.
func isUpperString(s string) bool {
	cased := false
	for _, r := range s {
		if pyLower(r) || unicode.IsTitle(r) {
			return false
		}
		if pyUpper(r) {
			cased = true
		}
	}
	return cased
}

// shouted: a cased text written entirely in capitals. A caseless script has
// no lowercase either, so capitals must be present too.
func shouted(text string) bool {
	return strings.IndexFunc(text, pyUpper) >= 0 && strings.IndexFunc(text, pyLower) < 0
}

func shoutedEvidence(tokens []string, language string, rate float64) bool {
	long := false
	for _, t := range tokens {
		long = long || utf8.RuneCountInString(t) >= shoutedMinWord
	}
	if !long {
		return false
	}
	if rate >= nonEnglishDiacriticRate {
		return true
	}
	list := stopsByLang[language]
	for _, t := range tokens {
		if w := strings.ToLower(t); list[w] && utf8.RuneCountInString(w) >= shoutedMinStopword {
			return true
		}
	}
	return false
}

// blankCaps replaces every all-caps letter run with a space.
func blankCaps(text string) string {
	return letterRun.ReplaceAllStringFunc(text, func(run string) string {
		if isUpperString(run) {
			return " "
		}
		return run
	})
}

// acronymVerdict re-takes a non-English verdict on a whole text without its
// acronyms: a shouted text must clear the shouted bar, and in mixed-case text
// all-caps runs too short to be words (MON, LA, EST) stop voting.
func acronymVerdict(text, language string, rate float64) string {
	if shouted(text) {
		if !shoutedEvidence(wordPattern.FindAllString(text, -1), language, rate) {
			return ""
		}
		return language
	}
	caps := 0
	for _, run := range letterRun.FindAllString(text, -1) {
		if !isUpperString(run) {
			continue
		}
		if utf8.RuneCountInString(run) >= shoutedMinWord {
			// A word, not an acronym: emphasis capitals keep their vote.
			return language
		}
		caps++
	}
	if caps > 0 {
		if blanked := blankCaps(text); blanked != text {
			return LatinProfile(blanked).Language
		}
	}
	return language
}

// namedProseLanguage is the non-English language one non-code line names, or "":
// four words, a language LatinProfile names, and two different words of it;
// acronyms and slash compounds are not words.
func namedProseLanguage(segment string) string {
	if strings.TrimFunc(segment, pySpace) == "" || codeLine.MatchString(segment) {
		return ""
	}
	fields := strings.FieldsFunc(segment, pySpace)
	if joinedToken.MatchString(segment) {
		kept := fields[:0]
		for _, f := range fields {
			if !joinedToken.MatchString(f) {
				kept = append(kept, f)
			}
		}
		fields = kept
	}
	prose := strings.Join(fields, " ")
	loud := shouted(prose)
	if !loud {
		prose = blankCaps(prose)
	}
	tokens := wordPattern.FindAllString(prose, -1)
	if len(tokens) < 4 {
		return ""
	}
	ev := LatinProfile(prose)
	language := ev.Language
	if language == "" || language == "en" {
		return ""
	}
	if loud && !shoutedEvidence(tokens, language, ev.DiacriticRate) {
		return ""
	}
	list := stopsByLang[language]
	distinct := map[string]bool{}
	for _, t := range tokens {
		if w := strings.ToLower(t); list[w] {
			distinct[w] = true
		}
	}
	if len(distinct) < 2 {
		return ""
	}
	return language
}

// severalParts: the state has more than one string leaf, or a leaf with a line
// break; a single line was already read whole.
func severalParts(state pyjson.Value) bool {
	n, lines := 0, false
	collect(state, 0, func(leaf string) bool {
		n++
		lines = lines || strings.Contains(leaf, "\n")
		return n < 2 && !lines
	})
	return n > 1 || lines
}

// nonEnglishSegment is the first line or field, read on its own, that names a
// non-English language, and that language; it reads at most 4000 characters.
func nonEnglishSegment(state pyjson.Value) (language, segment string, ok bool) {
	seen := 0
	collect(state, 0, func(leaf string) bool {
		for seg := range strings.SplitSeq(leaf, "\n") {
			if seen >= maxChars {
				return false
			}
			seg, _ = prefixRunes(seg, maxChars-seen)
			seen += utf8.RuneCountInString(seg)
			if l := namedProseLanguage(seg); l != "" {
				language, segment, ok = l, strings.TrimFunc(seg, pySpace), true
				return false
			}
		}
		return true
	})
	return language, segment, ok
}

// The field scan's bound, ours: upstream's analyse reads every string value of
// a structured state on its own, each line up to 4000 characters, with no cap
// on the total, so a state of millions of short strings costs an analysis of
// each. scanFields stops once it has spent fieldScanBudget: each line it reads
// costs its length in bytes plus fieldLineCost, the fixed price of analysing a
// line however short (an empty value is one empty line). 256 KiB is 64 times
// what the whole-state and segment scans read, so ordinary states, tickets
// and conversations are read to their end, while the costliest hostile state
// of BenchmarkAnalyzeHostile takes about a tenth of a second on one core. A
// value the budget runs out in is read up to there; later values are not read.
const (
	fieldScanBudget = 256 << 10
	fieldLineCost   = 64
)

// onFieldLine, when set, sees every line scanFields reads (tests count the
// work with it).
var onFieldLine func(line string)

// scanFields reads the string values of state one by one, within budget, and
// returns the detection of the non-English one with the most letters in its
// first 4000 characters (the first of equals), or nil.
func scanFields(state pyjson.Value, budget int) *Analysis {
	bestN := -1
	var best *Analysis
	collect(state, 0, func(leaf string) bool {
		det, spent := leafNonEnglish(leaf, budget)
		budget -= spent
		if det != nil {
			head, _ := prefixRunes(leaf, maxChars)
			if n := countLetters(head); n > bestN {
				bestN, best = n, det
			}
		}
		return budget > 0
	})
	return best
}

// leafNonEnglish is the detection of the longest line of a string value that is
// itself not safe for the English checkpoint, or nil, and the budget it spent
// (see fieldScanBudget); it stops when budget is spent. A one-word name, a
// capitalised non-Latin name, code lines, acronyms and slash compounds do not
// count, as in the segment scan. Each line is read up to 4000 characters.
func leafNonEnglish(leaf string, budget int) (*Analysis, int) {
	bestN := -1
	var best *Analysis
	spent := 0
	for rest, more := leaf, true; more && spent < budget; {
		// The line's end is looked for only as far as the budget reaches, so
		// one endless line costs no more than the budget either.
		reach := min(len(rest), max(0, budget-spent-fieldLineCost))
		for reach < len(rest) && reach > 0 && !utf8.RuneStart(rest[reach]) {
			reach--
		}
		line := rest[:reach]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			more = false
		}
		spent += len(line) + fieldLineCost
		if onFieldLine != nil {
			onFieldLine(line)
		}
		if det, n := lineNonEnglish(line); det != nil && n > bestN {
			bestN, best = n, det
		}
	}
	return best, spent
}

// lineNonEnglish is the detection of one line of a string value when that line
// is itself not safe for the English checkpoint, or nil, and the letters of
// the line's first 4000 characters, on which it was made.
func lineNonEnglish(line string) (*Analysis, int) {
	// Fewer than 7 characters cannot hold four words or 10 letters.
	if _, whole := prefixRunes(line, 6); whole {
		return nil, 0
	}
	sample, _ := prefixRunes(line, maxChars)
	if strings.TrimFunc(sample, pySpace) == "" || codeLine.MatchString(sample) {
		return nil, 0
	}
	det := analyzeText(sample)
	if det.IsEnglish {
		return nil, 0
	}
	named := det.Language != "" && det.Language != "en" && namedProseLanguage(sample) != ""
	if !named {
		if det.Script != Latin && det.Script != Unknown {
			if !hasNonLatinWords(sample) || countLetters(sample) < nonLatinMinLetters {
				return nil, 0
			}
		} else if det.DiacriticRate < nonEnglishDiacriticRate || len(wordPattern.FindAllString(sample, -1)) < 4 {
			return nil, 0
		}
	}
	return &det, countLetters(sample)
}

// countLetters counts Python str.isalpha characters.
func countLetters(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			n++
		}
	}
	return n
}
