package preset

import (
	"github.com/laya-metal/laya"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/laya-metal/laya/pyjson"
)

// Email cleaning, ported rule for rule from laya-mlx laya_mlx/email.py
// (tncki/laya-mlx@457bb780): quoted history, signatures, device footers and
// disclaimers in English, Portuguese and Spanish mail clients are removed so
// that the model weighs the new message, not the thread it replies to.
//
// Python's re differs from Go's RE2 in three ways that matter here, handled
// as follows: \s, \w and \d are Unicode classes in Python (spelled out below
// as pyS, pyW, pyD); lookahead (?=.*\d) becomes an extra "the line has a
// digit" test; and the Unicode-aware \b of the disclaimer pattern is rewritten
// with explicit non-word characters (see disclaimerPattern).

const (
	// Python str.isspace / \s: Unicode White_Space plus the separators \x1c-\x1f.
	pySpace = `\t\n\v\f\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`
	pyS     = `[` + pySpace + `]`
	pyNotS  = `[^` + pySpace + `]`
	pyD     = `\p{Nd}`
	pyWChar = `\p{L}\p{N}_`
	// a character that is neither a word character nor a full stop
	notWordNotDot = `[^` + pyWChar + `.]`
	notWord       = `[^` + pyWChar + `]`
)

// py rewrites the \s, \S and \d shorthands of a Python pattern into the
// Unicode classes Python gives them.
func py(pattern string) *regexp.Regexp {
	var b strings.Builder
	inClass := false
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < len(pattern):
			i++
			switch n := pattern[i]; {
			case n == 's' && inClass:
				b.WriteString(pySpace)
			case n == 's':
				b.WriteString(pyS)
			case n == 'S' && !inClass:
				b.WriteString(pyNotS)
			case n == 'd':
				b.WriteString(pyD)
			default:
				b.WriteByte('\\')
				b.WriteByte(n)
			}
			continue
		case c == '[' && !inClass:
			inClass = true
			if strings.HasPrefix(pattern[i+1:], "^") {
				b.WriteString("[^")
				i++
				continue
			}
		case c == ']' && inClass:
			inClass = false
		}
		b.WriteByte(c)
	}
	return regexp.MustCompile(b.String())
}

// linePattern is one line test; needDigit stands for Python's (?=.*\d) right
// after a literal prefix without digits, i.e. "the line holds a digit".
type linePattern struct {
	re        *regexp.Regexp
	needDigit bool
}

func (p linePattern) match(line string) bool {
	return p.re.MatchString(line) && (!p.needDigit || strings.IndexFunc(line, unicode.IsDigit) >= 0)
}

var quoteHeaders = []linePattern{
	{re: py(`(?i)^\s*On .{0,300}wrote:\s*$`)},
	// "Em resposta ao que você escreveu:" is body text; a client's attribution always carries a date
	{re: py(`(?i)^\s*Em .{0,300}escreveu:\s*$`), needDigit: true},
	{re: py(`(?i)^\s*El .{0,300}escribi[óo]:\s*$`), needDigit: true},
	{re: py(`(?i)^\s*-{2,}\s*(Original|Forwarded) Message\s*-{2,}`)},
	{re: py(`(?i)^\s*-{2,}\s*(Mensagem (original|encaminhada)|Mensaje (original|reenviado))\s*-{2,}`)},
	{re: py(`^\s*_{8,}\s*$`)},
	{re: py(`(?i)^\s*From:\s.+$`)},
	// `De:` also opens ordinary Portuguese/Spanish lines ("De: 10/09 a 15/09"),
	// so the Outlook header counts only when it carries an address.
	{re: py(`(?i)^\s*De:\s.*[@<]`)},
}

var (
	// Gmail wraps a long attribution, leaving "fulano@x.com> escreveu:" alone
	// on the next line; that tail cuts too, taking its On/Em/El head along.
	attributionTail = linePattern{re: py(`(?i)^.{0,120}\S@\S+\s+(wrote|escreveu|escribi[óo]):\s*$`)}
	attributionHead = linePattern{re: py(`(?i)^\s*(On|Em|El) `), needDigit: true}
	// Exchange often leaves the address out ("De: Maria Souza"), so a bare
	// `De:` cuts only when the header's own Enviado:/dated Data:/Fecha: line follows.
	headerFromName = linePattern{re: py(`(?i)^\s*De:\s+\S`)}
	headerNext     = linePattern{re: py(`(?i)^\s*(Enviad[oa]( em| el)?:\s|(Data|Fecha):\s.*\d{4})`)}
)

// signOffNameStart is Python's [^\W\d_a-zß-öø-ÿ]: a word character that is
// not a digit, underscore or Latin-1 lowercase letter. A name is capitalized,
// "for" in "Thanks for the quick reply." is not. RE2 has no class
// subtraction, so the class is assembled from the Unicode tables.
func signOffNameStart() string {
	var b strings.Builder
	b.WriteString(`[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{Nl}\p{No}\x{b5}`)
	for _, r := range unicode.Ll.R16 {
		lo, hi := rune(r.Lo), rune(r.Hi)
		if hi < 0x100 {
			continue
		}
		lo = max(lo, 0x100)
		if r.Stride == 1 {
			b.WriteString(`\x{` + hexRune(lo) + `}-\x{` + hexRune(hi) + `}`)
			continue
		}
		for c := lo; c <= hi; c += rune(r.Stride) {
			if c >= rune(r.Lo) && (c-rune(r.Lo))%rune(r.Stride) == 0 {
				b.WriteString(`\x{` + hexRune(c) + `}`)
			}
		}
	}
	for _, r := range unicode.Ll.R32 {
		for c := rune(r.Lo); c <= rune(r.Hi); c += rune(r.Stride) {
			b.WriteString(`\x{` + hexRune(c) + `}`)
		}
	}
	b.WriteString(`]`)
	return b.String()
}

func hexRune(r rune) string {
	const digits = "0123456789abcdef"
	if r == 0 {
		return "0"
	}
	var out []byte
	for ; r > 0; r >>= 4 {
		out = append([]byte{digits[r&0xf]}, out...)
	}
	return string(out)
}

var signatureMarkers = []linePattern{
	{re: py(`^\s*--\s*$`)},
	// A closing line is the closing word plus punctuation and at most a name
	// of up to three capitalized words; closing words match in any case, the name does not.
	{re: py(`^\s*(?i:best|kind|warmest|warm|many thanks|thanks|thank you|regards|cheers|sincerely)` +
		`(?i:\s+(?:and|&)\s+regards|\s+(?:regards|wishes|again|in advance|a lot|so much|very much))?` +
		`[\s,;:!.]*(?:` + signOffNameStart() + `[` + pyWChar + `'-]*[\s,.]*){0,3}$`)},
	{re: py(`(?i)^\s*sent from my (iphone|android|mobile|ipad)`)},
	// Portuguese/Spanish sign-offs match only on their own: "Obrigado pelo
	// retorno, mas ..." is a request, not a signature.
	{re: py(`(?i)^\s*(atenciosamente|att|abraços?|abs|um abraço|cordialmente|grat[oa]|(muito )?obrigad[oa]s?` +
		`( desde já| pela atenção)?|(com os melhores )?cumprimentos|saudações|` +
		`(un )?saludos?( cordiales)?|atentamente|(muchas )?gracias( de antemano)?)[\s,!.]*$`)},
}

// Mobile and mail-app footers: only a line that is nothing but the footer
// matches ("Enviado do meu celular o comprovante ontem." is a request).
const emailDevices = `iphone|ipad|android|ios|celular|telemóvel|móvil|galaxy|smartphone|samsung|tablet|` +
	`outlook|yahoo|mail|e-?mail|gmail|windows`

var deviceFooter = linePattern{re: py(`(?i)^\s*((enviad[oa] (do|pelo|pela|via|desde|a partir do)( meu| minha| mi)?|sent from( my)?)` +
	` (` + emailDevices + `)( (` + emailDevices + `|para|for|no|na|\d+))*|(obter o|get) outlook (para|for) (ios|android))[\s.!]*$`)}

// disclaimerPattern is laya-mlx's _DISCLAIMER with each Unicode \b spelled
// out. Go's \b only knows ASCII word characters, so "\búnicamente" would
// never match after a space. Every \b here sits at the start of an
// alternative, where (?:^|notWord) consumes the character before the word
// harmlessly, or between a word and a [^.]{0,n} gap, where "next character
// is not a word character" plus "gap without full stops" is exactly
// notWordNotDot followed by a shorter gap.
var disclaimerPattern = py(`(?i)(` +
	// English, tied to a disclaimer noun and tail: the bare word also appears
	// in requests ("Is this confidential?").
	`(?:^|` + notWord + `)(e-?mail|message|information|communication|transmission|contents?)` +
	notWordNotDot + `(?:[^.]{0,58}` + notWordNotDot + `)?confidential` +
	notWordNotDot + `(?:[^.]{0,58}` + notWordNotDot + `)?(intended|solely|addressee|recipient|privileged|disclos|unauthori[sz]ed)|` +
	`(?:^|` + notWord + `)confidential` + notWordNotDot + `(?:[^.]{0,58}` + notWordNotDot + `)?(and (may|is) (also )?privileged)|` +
	`if you (have )?received this (e-?mail|message) in error|` +
	// Portuguese/Spanish: tied to "this message/e-mail" rather than the bare
	// word `confidencial`, which a sender's own request uses just as often.
	`(?:^|` + notWord + `)(esta|este) (mensagem|e-?mail|mensaje|correo)` + notWordNotDot + `[^.]{0,79}(confidencia|sigilos|privilegiad)|` +
	`(?:^|` + notWord + `)(uso exclusivo|exclusivamente|únicamente|unicamente)` + notWordNotDot + `[^.]{0,29}(destinatári|destinatari|pessoa|persona|entidade|entidad)|` +
	`(?:^|` + notWord + `)(recebeu|recebido|receber) (esta|este) (mensagem|e-?mail)(?:` + notWordNotDot + `[^.]{0,19})? por (engano|erro)|` +
	`(?:^|` + notWord + `)(ha recibido|recibió|recibe) (este|esta) (mensaje|correo)(?:` + notWordNotDot + `[^.]{0,19})? por error|` +
	// the "think before printing" footer, tied to its environmental ending
	`(?:^|` + notWord + `)antes de imprimir` + notWordNotDot + `[^.]{0,99}(meio ambiente|medio ambiente|natureza|planeta|realmente necess)|` +
	`(?:^|` + notWord + `)(meio|medio) ambiente` + notWordNotDot + `[^.]{0,29}antes de imprimir)`)

var (
	paragraphBreak = py(`\n\s*\n`)
	spaceRun       = regexp.MustCompile(`[ \t]+`)
)

func emailIsSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

func pyTrim(s string) string      { return strings.TrimFunc(s, emailIsSpace) }
func pyTrimRight(s string) string { return strings.TrimRightFunc(s, emailIsSpace) }
func pyTrimLeft(s string) string  { return strings.TrimLeftFunc(s, emailIsSpace) }

// firstRunes is Python's s[:n] on code points.
func firstRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// splitSentences is Python's re.split(r"(?<=[.!?])\s+", p): split at each
// whitespace run that follows a full stop, question or exclamation mark.
func splitSentences(p string) []string {
	var out []string
	start := 0
	var prev rune
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRuneInString(p[i:])
		if emailIsSpace(r) && (prev == '.' || prev == '!' || prev == '?') {
			end := i
			for end < len(p) {
				r2, s2 := utf8.DecodeRuneInString(p[end:])
				if !emailIsSpace(r2) {
					break
				}
				end += s2
			}
			out = append(out, p[start:i])
			start, i, prev = end, end, 0
			continue
		}
		prev = r
		i += size
	}
	return append(out, p[start:])
}

// startsNewSentence: the first letter is uppercase. Lines in uncased scripts
// never start a new piece, so wrapped boilerplate in those scripts drops whole.
func startsNewSentence(line string) bool {
	for _, r := range line {
		if unicode.IsLetter(r) {
			return unicode.IsUpper(r)
		}
	}
	return false
}

// splitFusedLines splits a boilerplate sentence at newlines that start a new
// sentence: an unpunctuated request glued to a disclaimer ("locked\nThis ...")
// separates, a lowercase continuation ("are\nconfidential") stays.
func splitFusedLines(sentence string) []string {
	if !strings.Contains(sentence, "\n") {
		return []string{sentence}
	}
	var pieces []string
	buf := ""
	for _, ln := range strings.Split(sentence, "\n") {
		line := pyTrim(ln)
		if line == "" {
			continue
		}
		switch {
		case buf != "" && startsNewSentence(line):
			pieces = append(pieces, buf)
			buf = line
		case buf != "":
			buf += " " + line
		default:
			buf = line
		}
	}
	if buf != "" {
		pieces = append(pieces, buf)
	}
	return pieces
}

// stripDisclaimer drops boilerplate sentences from one paragraph; the
// paragraph goes whole only when every sentence is boilerplate, so a footer
// that runs on without a blank line does not take the request with it.
func stripDisclaimer(paragraph string) string {
	if !disclaimerPattern.MatchString(paragraph) {
		return paragraph
	}
	var pieces []string
	for _, s := range splitSentences(paragraph) {
		s = pyTrim(s)
		if s == "" {
			continue
		}
		if disclaimerPattern.MatchString(s) {
			pieces = append(pieces, splitFusedLines(s)...)
		} else {
			pieces = append(pieces, s)
		}
	}
	kept := pieces[:0]
	for _, p := range pieces {
		if !disclaimerPattern.MatchString(p) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, " ")
}

func matchAny(patterns []linePattern, line string) bool {
	for _, p := range patterns {
		if p.match(line) {
			return true
		}
	}
	return false
}

// DefaultEmailMaxChars is the length CleanEmailBody keeps when given 0.
const DefaultEmailMaxChars = 3000

// CleanEmailBody removes quoted history (On … wrote:, Em … escreveu:,
// El … escribió:, Original Message, From:/De: headers), ">" lines,
// signatures, device footers and disclaimers from an email body, and returns
// at most maxChars characters (DefaultEmailMaxChars when maxChars is 0 or less).
func CleanEmailBody(body string, maxChars int) string {
	if maxChars <= 0 {
		maxChars = DefaultEmailMaxChars
	}
	text := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(body)
	text = strings.ReplaceAll(text, `\n`, "\n")
	// Bound regex work: only maxChars are returned, and the disclaimer
	// pattern's bounded gaps cost more on longer input.
	text = firstRunes(text, maxChars*4)
	src := strings.Split(text, "\n")
	var lines []string
	for i, line := range src {
		if len(lines) > 0 && matchAny(quoteHeaders, line) {
			break
		}
		if len(lines) > 0 && headerFromName.match(line) && i+1 < len(src) && headerNext.match(src[i+1]) {
			break
		}
		if len(lines) > 0 && attributionTail.match(line) {
			if attributionHead.match(lines[len(lines)-1]) {
				lines = lines[:len(lines)-1]
			}
			break
		}
		if strings.HasPrefix(pyTrimLeft(line), ">") {
			continue
		}
		lines = append(lines, pyTrimRight(line))
	}
	// Signatures are looked for only in the last part of the message.
	cut := len(lines)
	from := max(1, min(int(float64(len(lines))*0.6), len(lines)-8))
	for i := from; i < len(lines); i++ {
		n := utf8.RuneCountInString(pyTrim(lines[i]))
		if (n <= 40 && matchAny(signatureMarkers, lines[i])) || (n <= 60 && deviceFooter.match(lines[i])) {
			cut = i
			break
		}
	}
	lines = lines[:cut]
	var paragraphs []string
	for _, p := range paragraphBreak.Split(strings.Join(lines, "\n"), -1) {
		if p = pyTrim(stripDisclaimer(p)); p != "" {
			paragraphs = append(paragraphs, p)
		}
	}
	text = spaceRun.ReplaceAllString(strings.Join(paragraphs, "\n\n"), " ")
	return firstRunes(text, maxChars)
}

// EmailOption adjusts EmailState.
type EmailOption func(*emailConfig)

type emailConfig struct {
	sender string
	raw    bool
	extra  []pyjson.Member
}

// WithSender adds the sender as the state's "from" field.
func WithSender(address string) EmailOption {
	return func(c *emailConfig) { c.sender = address }
}

// WithRawBody keeps the body exactly as given (laya-mlx clean=False).
func WithRawBody() EmailOption {
	return func(c *emailConfig) { c.raw = true }
}

// WithEmailField adds a field to the state after subject, body and from; a
// field named like one of those replaces its value in place, as Python's
// dict.update does. A null value is skipped, as laya-mlx skips None.
func WithEmailField(key string, value laya.Value) EmailOption {
	return func(c *emailConfig) { c.extra = append(c.extra, pyjson.Member{Key: key, Value: value}) }
}

// EmailState builds the state EmailQuestions reads:
// {"subject": …, "body": …, ["from": …], extra fields…}, with the subject
// trimmed and the body cleaned by CleanEmailBody (limit DefaultEmailMaxChars).
func EmailState(subject, body string, opts ...EmailOption) laya.State {
	var cfg emailConfig
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.raw {
		body = CleanEmailBody(body, DefaultEmailMaxChars)
	}
	members := []pyjson.Member{{Key: "subject", Value: pyjson.String(pyTrim(subject))}, {Key: "body", Value: pyjson.String(body)}}
	if cfg.sender != "" {
		members = append(members, pyjson.Member{Key: "from", Value: pyjson.String(cfg.sender)})
	}
	for _, e := range cfg.extra {
		if e.Value.Kind() == pyjson.NullKind {
			continue
		}
		replaced := false
		for i := range members {
			if members[i].Key == e.Key {
				members[i].Value, replaced = e.Value, true
			}
		}
		if !replaced {
			members = append(members, e)
		}
	}
	return laya.ValueState(pyjson.Object(members...))
}
