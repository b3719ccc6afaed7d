package lang

import "strings"

// Function-word lists, verbatim from upstream laya/lang.py (_STOP) as of
// 0.3.29 (mirrored at tgundhus/laya@2d0be4e9). Latin-script languages overlap heavily
// (de/la/le/un/e/que), so each hit is weighted and a margin is required before
// calling something non-English. The Romance lists deliberately carry
// unaccented function words too: states that lost their accents keep no
// diacritic rate, so these words are the only evidence left (laya-mlx #172,
// #54). Order matters: ties between languages go to the earlier list, as
// Python's max() over the dict does.
var stopLists = []struct {
	lang  string
	words string
}{
	{"en", `the and is are was were to of in for with that this it you have has not but on at be as from will can would there their what which please we i`},
	{"fr", `le la les des une est pour dans que qui avec sur pas plus nous vous être cette mais sont ont aux ce et du au ou je tu il elle ils elles mon ton ma ta sa mes tes ses ces deux trois très bien tout tous toute fait veux veut peux peut dois doit merci bonjour jour jours mois fois quand comment pourquoi alors donc`},
	// "in" and "was" are shared with English on purpose: counted for English
	// alone, they outvoted short German.
	{"de", `der die das und ist ein eine den dem nicht mit für auf von zu sich auch werden wurde haben sind oder aber ich wir mir mich dir dich uns mein meine meinen meinem meiner diese dieser diesen dieses einen einem einer wie wo wann welche im zum zur aus bei nach noch bitte heute jetzt kann kannst habe gibt wird in was`},
	// "de"/"en" are Spanish too, but common English tokens as well (de facto,
	// en-US), so they stay out.
	{"es", `el los las que por con para una es se del como pero son está este esta todo más muy hay sus la un y al lo le les su mi tu nos ni dos tres fue fueron ser tiene tienen tengo puede pueden quiero necesito hemos han sobre entre cuando donde porque aunque también ya eso esto esa ese nada algo aquí hoy gracias`},
	// "no" is Portuguese too but one of the most frequent English words, so it
	// stays out; so do ate, bom, sim and cade (English tokens as well).
	{"pt", `os as que em um uma para com não é se do da dos das mas são está este esta muito pelo pela o e na nas nos ao aos por foi era ser sou tem tenho pode podem quero preciso eu meu minha seu sua isso isto aqui ali como quando onde porque mais já ainda agora hoje ontem dois três tudo nada obrigado olá você vocês voce voces vc vcs nao sao ja até tá pra gostaria obrigada também tambem estou estamos meus minhas nosso nossa consigo cadê boa tarde noite depois antes então entao ninguém ninguem alguém alguem nenhum nenhuma estava ficou fiz deu`},
	{"it", `il lo gli che di per con non è si del della sono questo questa anche come più sono nella alla la le un uno una e ed o da su tra fra mi ci ne ho hai ha abbiamo avete hanno era stato stata devo deve devono voglio vorrei mio mia tuo sua quando dove perche molto poco sempre mai già ancora adesso oggi ieri grazie ciao scusa nel nell negli sul sulla sulle dal dalla dallo dagli dei delle dello degli agli alle col`},
	{"nl", `het een van is op te dat niet met voor zijn aan door maar ook worden deze naar wordt`},
	// Swedish function words and auxiliaries, then the support vocabulary and its
	// ASCII spellings that ticket systems leave once they strip å, ä and ö (upstream
	// docs/swedish.md). "i", "kan" and "har" are English or German too and stay out.
	{"sv", `jag är och inte att från till behöver får skulle ska vill måste också dessa detta säger upp utan mitt min om kommer här två vi nästa gör göra ` +
		`hjälp hjälpa mig återbetalning återbetala faktura gång gånger hittar inställningen inställningarna lösenord när öppnar spårningen ` +
		`aterbetalning aterbetala behover fel ganger hjalp hjalpa installningen installningarna kraschar kvittot losenord nar oppnar paket skicka sparningen tva uppdaterats blivit debiterade appen`},
	// Romanian words its Romance neighbours do not share (la, o, un, de, pe, ca
	// are left out so that ro cannot steal a French/Spanish/Italian/Portuguese state).
	{"ro", `și să este sunt care pentru din dar după până fără ale lui în fost acum vreau trebuie foarte acest această acesta aceasta mi ți vă nu`},
	// Romanized Bangla ("Banglish"), with the common spelling variants; words
	// that are also English (ache, are, to, take, age, ...) are left out.
	{"bn", `ami amar amake amra amader apni apnar apnake apnara tumi tomar tomake tomra tader ota eita oita ekta ei oi ki keno kivabe kibhabe kothay kokhon kobe koto kintu jodi tahole ar theke jonno sathe shathe diye niye moddhe kore korte korchi korsi korbo korechi koreche korun koren korlam hobe hoyeche hoise hocche hoyni chai chaina lagbe parchi parbo parchina peyechi paini dite dilam diyechi nai khub onek ekhon akhon ekhono abar ekbar duibar ajke kalke taka bhalo valo kharap shomossa somossa dhonnobad bhai shob keu kichu bolte bolun parben asbe jabe pabo ferot dorkar hoye geche gese`},
	// "her", "ne", "men", "de" collide with English, French and Romanian, and
	// "ki" with the romanized Bangla list, so they are left out.
	{"az", `və ve bir bu üçün ucun ilə ile olan olub olmasa var yox yoxdur mən sən biz siz onlar daha çox cox hər nə kimi görə sonra əgər eger deyil lakin amma ancaq artıq artiq də isə həm yalnız yalniz`},
}

// nonEnglishDiacritics are letters ordinary English does not use
// (laya-mlx _NON_EN_DIACRITICS): the signal that catches a Latin-script
// language with no stopword list (Polish, Czech, Turkish, Baltic, ...).
const nonEnglishDiacritics = "àâäãáåçéèêëíìîïñóòôöõøúùûüýÿßæœ" + // Western European
	"ăâîșțşţ" + // Romanian
	"ąćęłńśźż" + // Polish
	"čďěňřšťůž" + // Czech / Slovak
	"őű" + // Hungarian
	"ğı" + // Turkish (text is lower-cased before matching)
	"āēģīķļņūž" + // Baltic
	"đ" + // Serbo-Croatian / Vietnamese
	"ə" // Azerbaijani

type stopList struct {
	lang  string
	words map[string]bool
}

// shortSwedishWords name Swedish in a fragment of two or three words, below the
// four words the general guess needs: support words specific enough on their own
// ("glömt lösenord"), with their ASCII spellings. Generic ones (fel, paket, appen)
// are not among them.
const shortSwedishWords = `åtkomst atkomst lösenord losenord fakturan betalningen inloggningen glömt glomt behöver behover ` +
	`återbetalning aterbetalning kvitto kvittot spårningen sparningen inställningen installningen felmeddelande abonnemanget`

// nordicOverlapWords are Swedish words Danish and Norwegian share: they never name
// Swedish alone, though a text of nothing else is not English either.
const nordicOverlapWords = `hej ja nej jo tack mig min om kommer får skulle vi`

// enCollisionWords are foreign function words that are also ordinary English
// words (Italian "come", Spanish "son", Portuguese "do", German "im" for "I'm"): a
// repeat of one is the same English word again, so each counts once (upstream #955).
const enCollisionWords = `come son do care todo im per plus`

var (
	stops       []stopList
	sharedWords = map[string]bool{} // claimed by more than one list: they name no language alone
	diacritics  = map[rune]bool{}
	// enOnlyWords are the English function words no other list holds.
	enOnlyWords   = map[string]bool{}
	shortSwedish  = map[string]bool{}
	nordicOverlap = map[string]bool{}
	enCollision   = map[string]bool{}
	// stopsByLang indexes the word lists by language code.
	stopsByLang = map[string]map[string]bool{}
)

func init() {
	count := map[string]int{}
	for _, l := range stopLists {
		set := map[string]bool{}
		for _, w := range strings.Fields(l.words) {
			set[w] = true
		}
		for w := range set {
			count[w]++
		}
		stops = append(stops, stopList{lang: l.lang, words: set})
		stopsByLang[l.lang] = set
	}
	for w, n := range count {
		if n > 1 {
			sharedWords[w] = true
		}
	}
	for _, w := range strings.Fields(nordicOverlapWords) {
		nordicOverlap[w] = true
		sharedWords[w] = true
	}
	for w := range stops[0].words {
		if !sharedWords[w] {
			enOnlyWords[w] = true
		}
	}
	for _, w := range strings.Fields(shortSwedishWords) {
		shortSwedish[w] = true
	}
	for _, w := range strings.Fields(enCollisionWords) {
		// Only a word some foreign list holds can collide.
		for _, l := range stops[1:] {
			if l.words[w] {
				enCollision[w] = true
			}
		}
	}
	for _, r := range nonEnglishDiacritics {
		diacritics[r] = true
	}
}

// scriptRanges are the Unicode blocks the English checkpoint cannot read, in
// laya-mlx's order (_SCRIPT_RANGES).
var scriptRanges = []struct {
	name   string
	ranges [][2]rune
}{
	{"greek", [][2]rune{{0x0370, 0x03FF}, {0x1F00, 0x1FFF}}},
	{"cyrillic", [][2]rune{{0x0400, 0x052F}, {0x2DE0, 0x2DFF}, {0xA640, 0xA69F}}},
	{"armenian", [][2]rune{{0x0530, 0x058F}}},
	{"hebrew", [][2]rune{{0x0590, 0x05FF}}},
	{"arabic", [][2]rune{{0x0600, 0x06FF}, {0x0750, 0x077F}, {0x08A0, 0x08FF}, {0xFB50, 0xFDFF}, {0xFE70, 0xFEFF}}},
	{"devanagari", [][2]rune{{0x0900, 0x097F}, {0xA8E0, 0xA8FF}}},
	{"bengali", [][2]rune{{0x0980, 0x09FF}}},
	{"gurmukhi", [][2]rune{{0x0A00, 0x0A7F}}},
	{"gujarati", [][2]rune{{0x0A80, 0x0AFF}}},
	{"oriya", [][2]rune{{0x0B00, 0x0B7F}}},
	{"tamil", [][2]rune{{0x0B80, 0x0BFF}}},
	{"telugu", [][2]rune{{0x0C00, 0x0C7F}}},
	{"kannada", [][2]rune{{0x0C80, 0x0CFF}}},
	{"malayalam", [][2]rune{{0x0D00, 0x0D7F}}},
	{"sinhala", [][2]rune{{0x0D80, 0x0DFF}}},
	{"thai", [][2]rune{{0x0E00, 0x0E7F}}},
	{"lao", [][2]rune{{0x0E80, 0x0EFF}}},
	{"tibetan", [][2]rune{{0x0F00, 0x0FFF}}},
	{"myanmar", [][2]rune{{0x1000, 0x109F}}},
	{"georgian", [][2]rune{{0x10A0, 0x10FF}}},
	{"ethiopic", [][2]rune{{0x1200, 0x137F}}},
	{"khmer", [][2]rune{{0x1780, 0x17FF}}},
	{"hangul", [][2]rune{{0x1100, 0x11FF}, {0x3130, 0x318F}, {0xAC00, 0xD7AF}}},
	{"kana", [][2]rune{{0x3040, 0x309F}, {0x30A0, 0x30FF}, {0x31F0, 0x31FF}}},
	{"han", [][2]rune{{0x3400, 0x4DBF}, {0x4E00, 0x9FFF}, {0xF900, 0xFAFF}}},
}

// namedScript returns the named non-Latin script of cp, or "".
func namedScript(cp rune) string {
	for _, s := range scriptRanges {
		for _, r := range s.ranges {
			if r[0] <= cp && cp <= r[1] {
				return s.name
			}
		}
	}
	return ""
}
