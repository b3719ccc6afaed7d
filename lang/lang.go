package lang

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/laya-metal/laya/pyjson"
)

// Detection limits (laya-mlx state_text/_iter_text): string leaves deeper
// than maxDepth are not read, and only the first maxChars characters of the
// joined text are examined.
const (
	maxDepth = 6
	maxChars = 4000
)

// Thresholds, as upstream names them.
const (
	// A diacritic rate at or above this is evidence the text is not English,
	// even when no stopword list matches it.
	nonEnglishDiacriticRate = 0.02
	// Non-Latin text is not for the English checkpoint even when Latin letters
	// are the plurality (a brand name or order code outvotes the CJK request
	// around it letter for letter): a short message needs a 20% share, a long
	// payload 10% and at least 10 letters.
	nonLatinFraction    = 0.2
	nonLatinMinFraction = 0.1
	nonLatinMinLetters  = 10
	// One accented loanword or name (café, José) does not pull plain English off
	// the English checkpoint unless the diacritic rate reaches this.
	englishRescueDiacriticRate = 0.06
)

// Script names returned in Analysis.Script besides the named non-Latin ones.
const (
	Latin   = "latin"
	Unknown = "unknown" // no letters at all
	Other   = "other"   // letters of a script no range names
)

// Share is one script's fraction of the alphabetic characters.
type Share struct {
	Script   string
	Fraction float64
}

// Analysis is the detection result for a state.
type Analysis struct {
	Script string // "latin", a named script ("han", "cyrillic", ...), "other" or "unknown"
	// Profile lists each script's share of the letters: Latin first, then the
	// others in the order they first occur (the order upstream's dict has).
	Profile []Share
	// Language is the best-effort Latin-script language ("en", "fr", "de",
	// "es", "pt", "it", "nl", "sv", "ro", "bn", "az"), or "" when undecided or not Latin.
	Language          string
	IsEnglish         bool    // the English checkpoint can be expected to read this state
	LanguageUndecided bool    // nothing named the language
	DiacriticRate     float64 // share of non-English diacritic letters, rounded to 4 places
	NonLatinFraction  float64 // share of non-Latin letters, rounded to 4 places
	// MixedSegment is the line or field, read on its own, that made a state which
	// reads as English overall non-English (upstream "mixed_segment"), or "".
	MixedSegment string
}

// Fraction returns the profile share of script (0 when absent).
func (a Analysis) Fraction(script string) float64 {
	for _, s := range a.Profile {
		if s.Script == script {
			return s.Fraction
		}
	}
	return 0
}

// LatinEvidence is what the Latin-script language guess rests on.
type LatinEvidence struct {
	Language      string  // "" when undecided
	EnglishHits   int     // English function words matched
	DiacriticRate float64 // unrounded
	// LooksNonEnglish: DiacriticRate >= 0.02, or the words are Swedish-Danish
	// ones and no English ones, and nothing named a language.
	LooksNonEnglish bool
}

// Analyze detects the script and, for Latin text, the language of a state: a
// JSON string, or a structure whose string leaves are read in document order
// (see Text). Keys are ignored: they are usually English whatever the content
// is. Build a state from Go values with pyjson.ValueOf or pyjson.String.
//
// A state that reads as English as a whole is read again line by line and
// field by field, as upstream's analyse does: one non-English line or field is
// enough to make it non-English (a Portuguese ticket under an English stack
// trace), because the part a question is about is usually the customer's.
// A structured state that still reads as English has each of its fields read
// on its own, as upstream does, up to about 256 KiB of field text in all (a
// bound of ours; upstream reads every field): a hostile state of millions of
// strings costs no more than that.
func Analyze(state pyjson.Value) Analysis {
	res := analyzeText(Text(state))
	if res.Script == Latin && res.IsEnglish && severalParts(state) {
		if language, seg, ok := nonEnglishSegment(state); ok {
			res.Language, res.IsEnglish, res.LanguageUndecided, res.MixedSegment = language, false, false, seg
		}
	}
	if k := state.Kind(); k == pyjson.StringKind || k == pyjson.NullKind || !res.IsEnglish {
		return res
	}
	// A structured state can still hide a message past the segment scan's budget,
	// or in a script the word lists do not name: every field is read on its own,
	// within fieldScanBudget.
	if best := scanFields(state, fieldScanBudget); best != nil {
		res.Language, res.IsEnglish, res.LanguageUndecided = best.Language, false, best.LanguageUndecided
	}
	return res
}

// analyzeText is the detection of one flattened text, without the line scan.
func analyzeText(text string) Analysis {
	prof, letters, script := profile(text)
	nonLatin := 0.0
	if len(prof) > 0 {
		nonLatin = round4(1 - shareOf(prof, Latin))
	}
	carries := nonLatinCarries(nonLatin, letters)
	if script == Latin && carries && hasNonLatinWords(text) {
		best := -1.0
		for _, s := range prof {
			if s.Script != Latin && s.Fraction > best {
				script, best = s.Script, s.Fraction
			}
		}
	}
	switch script {
	case Unknown:
		return Analysis{Script: Unknown, Profile: prof, IsEnglish: true, LanguageUndecided: true}
	case Latin:
	default:
		return Analysis{Script: script, Profile: prof, LanguageUndecided: true, NonLatinFraction: nonLatin}
	}
	ev := LatinProfile(text)
	language := ev.Language
	if language != "" && language != "en" && !carries {
		language = acronymVerdict(text, language, ev.DiacriticRate)
	}
	// Undecided is not English: a Latin-script language with no stopword list
	// must not reach the English checkpoint silently, so non-English letters
	// decide when no list does.
	undecided := language == ""
	return Analysis{
		Script:            Latin,
		Profile:           prof,
		Language:          language,
		IsEnglish:         language == "en" || (undecided && !ev.LooksNonEnglish),
		LanguageUndecided: undecided,
		DiacriticRate:     round4(ev.DiacriticRate),
		NonLatinFraction:  nonLatin,
	}
}

// nonLatinCarries: the non-Latin letters of a Latin-plurality text are enough to
// carry it (a short message needs a 20% share, a long payload 10% and 10 letters).
func nonLatinCarries(nonLatin float64, letters int) bool {
	n := math.RoundToEven(nonLatin * float64(letters))
	return nonLatin >= nonLatinFraction || (nonLatin >= nonLatinMinFraction && n >= nonLatinMinLetters)
}

// IsEnglish reports whether the English checkpoint can be expected to read state.
func IsEnglish(state pyjson.Value) bool { return Analyze(state).IsEnglish }

// DetectScript returns the dominant script of text, or "unknown" when it has no letters.
func DetectScript(text string) string {
	_, _, script := profile(text)
	return script
}

// profile counts letters per script. It returns the shares (Latin first,
// then first-occurrence order, zero shares dropped), the number of letters,
// and the dominant script; a tie goes to the script that occurs first, Latin
// last, as Python's max() over laya-mlx's counts dict decides it.
func profile(text string) ([]Share, int, string) {
	var order []string
	counts := map[string]int{}
	latin, total := 0, 0
	for _, r := range text {
		if !unicode.IsLetter(r) { // Python str.isalpha: categories L*
			continue
		}
		total++
		if isLatinLetter(r) {
			latin++
			continue
		}
		name := namedScript(r)
		if name == "" {
			// Letters of unlisted scripts count as "other": an unreadable
			// script must not be handed to the English checkpoint.
			name = Other
		}
		if counts[name] == 0 {
			order = append(order, name)
		}
		counts[name]++
	}
	if total == 0 {
		return nil, 0, Unknown
	}
	dominant, best := "", -1
	for _, name := range order {
		if counts[name] > best {
			dominant, best = name, counts[name]
		}
	}
	if latin > best {
		dominant = Latin
	}
	var shares []Share
	if latin > 0 {
		shares = append(shares, Share{Latin, float64(latin) / float64(total)})
	}
	for _, name := range order {
		shares = append(shares, Share{name, float64(counts[name]) / float64(total)})
	}
	return shares, total, dominant
}

// isLatinLetter: Basic Latin through Latin Extended-B and IPA Extensions
// (below U+02B0), Latin Extended Additional, and fullwidth A-Z/a-z.
func isLatinLetter(r rune) bool {
	return r < 0x02B0 || (0x1E00 <= r && r <= 0x1EFF) || (0xFF21 <= r && r <= 0xFF3A) || (0xFF41 <= r && r <= 0xFF5A)
}

func shareOf(prof []Share, script string) float64 {
	for _, s := range prof {
		if s.Script == script {
			return s.Fraction
		}
	}
	return 0
}

// hasNonLatinWords reports runs of two or more letters of one named
// non-Latin script that do not start with a capital. English prose carries
// non-Latin letters that are not a request in another script: a symbol
// (one letter), a proper name (capitalized), a pronunciation (IPA, which no
// range claims). Combining marks are skipped so they never split a word.
func hasNonLatinWords(text string) bool {
	var run []rune
	script := ""
	check := func() bool {
		return len(run) >= 2 && !unicode.IsUpper(run[0])
	}
	for _, r := range text {
		if norm.NFD.PropertiesString(string(r)).CCC() != 0 {
			continue
		}
		s := ""
		if !(r < 0x0250 || (0x1E00 <= r && r <= 0x1EFF) || (0xFF21 <= r && r <= 0xFF3A) || (0xFF41 <= r && r <= 0xFF5A)) {
			s = namedScript(r)
		}
		if s != "" && s == script {
			run = append(run, r)
			continue
		}
		if check() {
			return true
		}
		run, script = run[:0], s
		if s != "" {
			run = append(run, r)
		}
	}
	return check()
}

var (
	// Python's [^\W\d_]+: letters plus numeric characters that are not
	// decimal digits (Nl, No); combining marks are not \w in Python and split words.
	wordPattern = regexp.MustCompile(`[\p{L}\p{Nl}\p{No}]+`)
	// A token whose dot or @ joins word characters is an identifier, not prose
	// (github.com, user@acme.com, v1.2.3): its pieces would collide with real
	// function words ("com" is Portuguese, "o" its article).
	identifierPattern = regexp.MustCompile(`[\p{L}\p{N}_-]*(?:[.@][\p{L}\p{N}_-]+)+`)
)

// LatinProfile scores Latin-script text against the function-word lists.
// A non-English language is named only when it matched a word no other list
// claims, and beats English by two hits (or ties it with at least two hits
// when the text has non-English diacritics). English keeps a text with one
// accented loanword when two English-only function words vouch for it
// (upstream #337).
func LatinProfile(text string) LatinEvidence {
	prose := text
	if strings.ContainsAny(text, ".@") {
		prose = identifierPattern.ReplaceAllString(text, " ")
	}
	words := wordPattern.FindAllString(strings.ToLower(strings.ReplaceAll(prose, "İ", "i")), -1)
	lowered := strings.ToLower(text)
	diac := 0
	for _, r := range lowered {
		if diacritics[r] {
			diac++
		}
	}
	// Python's "İ".lower() is two characters (i + U+0307); Go's is one.
	length := utf8.RuneCountInString(lowered) + strings.Count(text, "İ")
	rate := float64(diac) / float64(max(1, length))
	nonEnglish := rate >= nonEnglishDiacriticRate
	nordic := anyIn(words, nordicOverlap) && !anyIn(words, enOnlyWords)
	ev := LatinEvidence{DiacriticRate: rate, LooksNonEnglish: nonEnglish}
	if len(words) > 1 && len(words) < 4 && anyIn(words, shortSwedish) {
		ev.Language = "sv"
		return ev
	}
	if len(words) < 4 {
		ev.LooksNonEnglish = nonEnglish || nordic
		return ev
	}
	counts := make(map[string]int, len(words))
	for _, w := range words {
		counts[w]++
	}
	scores := make([]int, len(stops))
	for i, l := range stops {
		for w, n := range counts {
			if !l.words[w] {
				continue
			}
			if enCollision[w] {
				n = 1
			}
			scores[i] += n
		}
	}
	en := scores[0] // stops[0] is English
	bestLang, best := "", 0
	// Only a language that matched a word of its own may be named; among
	// those the first highest score wins, as Python's max() picks it.
	for i, l := range stops[1:] {
		if (bestLang == "" || scores[i+1] > best) && evidenced(counts, l.words) {
			bestLang, best = l.lang, scores[i+1]
		}
	}
	ev.EnglishHits = en
	switch {
	case bestLang != "" && best >= max(2, en+2):
		ev.Language = bestLang
	case bestLang == "sv" && counts["inte"] > 0 && counts["kan"] > 0 &&
		(words[0] == "kan" || words[0] == "jag" || words[0] == "vi") && en <= 1:
		// "kan inte logga in": a Swedish phrase with one English-shaped token.
		ev.Language = bestLang
	case bestLang != "" && nonEnglish && best >= max(2, en):
		ev.Language = bestLang
	case en > 0 && (!nonEnglish || englishRescued(counts, rate)):
		ev.Language = "en"
	}
	ev.LooksNonEnglish = nonEnglish || (ev.Language == "" && nordic)
	return ev
}

// englishRescued: two distinct English-only function words and at most one word
// with a non-English letter outvote a marginal diacritic rate.
func englishRescued(counts map[string]int, rate float64) bool {
	if rate >= englishRescueDiacriticRate {
		return false
	}
	en, accented := 0, 0
	for w := range counts {
		if enOnlyWords[w] {
			en++
		}
		if strings.IndexFunc(w, func(r rune) bool { return diacritics[r] }) >= 0 {
			accented++
		}
	}
	return en >= 2 && accented <= 1
}

func anyIn(words []string, set map[string]bool) bool {
	for _, w := range words {
		if set[w] {
			return true
		}
	}
	return false
}

// evidenced: the text has a word of this list that no other list claims.
func evidenced(counts map[string]int, list map[string]bool) bool {
	for w := range counts {
		if list[w] && !sharedWords[w] {
			return true
		}
	}
	return false
}

// GuessLatinLanguage returns the best-effort language code of Latin-script
// text, or "" when undecided.
func GuessLatinLanguage(text string) string { return LatinProfile(text).Language }

// round4 is Python's round(x, 4): correctly rounded from the binary value,
// ties to even, as strconv formats it.
func round4(x float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 4, 64), 64)
	return r
}

// Text flattens a state into the text detection reads, as upstream's
// state_text does (laya/lang.py): the string leaves in document order, object
// keys ignored, numbers, booleans and null skipped, a leaf nested deeper than 6
// containers not read, joined by single spaces within a budget of 4000
// characters: a leaf is taken while the budget lasts (each costs its length
// and one separator), the leaf that overflows it is cut to what is left, and
// the joined text is cut to 4000 characters. A huge state costs no more than
// its first 4000 characters of text.
func Text(state pyjson.Value) string {
	var parts []string
	budget := maxChars
	collect(state, 0, func(leaf string) bool {
		if budget <= 0 {
			return false
		}
		head, whole := prefixRunes(leaf, budget)
		parts = append(parts, head)
		if !whole {
			return false
		}
		budget -= utf8.RuneCountInString(head) + 1
		return true
	})
	text, _ := prefixRunes(strings.Join(parts, " "), maxChars)
	return text
}

// prefixRunes returns the first n characters of s, and whether that is all of s.
func prefixRunes(s string, n int) (string, bool) {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos], false
		}
		i++
	}
	return s, true
}

// collect calls leaf for every string leaf in document order until it
// returns false. Keys are ignored; numbers, booleans and null are not text.
func collect(state pyjson.Value, depth int, leaf func(string) bool) bool {
	if depth > maxDepth {
		return true
	}
	switch state.Kind() {
	case pyjson.StringKind:
		return leaf(state.Str())
	case pyjson.ArrayKind:
		for _, item := range state.Items() {
			if !collect(item, depth+1, leaf) {
				return false
			}
		}
	case pyjson.ObjectKind:
		for _, m := range state.Members() {
			if !collect(m.Value, depth+1, leaf) {
				return false
			}
		}
	}
	return true
}
