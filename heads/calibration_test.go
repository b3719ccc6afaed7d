package heads

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// goldenRow is the part of a cases.json row that calibration reads.
type goldenRow struct {
	QID         string    `json:"qid"`
	Type        string    `json:"type"`
	K           int       `json:"k"`
	Bucket      string    `json:"bucket"`
	Temperature float64   `json:"temperature"`
	Logits      []float32 `json:"logits"`
	Probs       []float32 `json:"probs"`
}

type goldenAnswer struct {
	Score            *float64 `json:"score"`
	Noul             *float64 `json:"noul"`
	Confidence       float64  `json:"confidence"`
	AnswerConfidence float64  `json:"answer_confidence"`
}

type goldenCase struct {
	Name   string      `json:"name"`
	Rows   []goldenRow `json:"rows"`
	Answer struct {
		Answers map[string]goldenAnswer `json:"answers"`
	} `json:"answer"`
}

type goldenFile struct {
	Load struct {
		TemperatureApplied []float64          `json:"temperature_applied"`
		ByOptionsApplied   map[string]float64 `json:"temperature_by_options_applied"`
	} `json:"load"`
	Cases []goldenCase `json:"cases"`
}

var checkpoints = []string{"tiny-en", "tiny-ml", "real-en"}

func loadGolden(t *testing.T, name string) goldenFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "oracle", "goldens", name, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCalibrationAgainstGoldens recomputes every golden row from its raw logits: bucket,
// temperature, the float32 probabilities bit for bit, and each rounded output field.
func TestCalibrationAgainstGoldens(t *testing.T) {
	for _, name := range checkpoints {
		g := loadGolden(t, name)
		temps := Temperatures{ByOptions: g.Load.ByOptionsApplied}
		copy(temps.ByType[:], g.Load.TemperatureApplied)
		rows := 0
		for _, c := range g.Cases {
			for _, r := range c.Rows {
				rows++
				where := name + "/" + c.Name + "/" + r.QID
				qt, ok := ParseQType(r.Type)
				if !ok {
					t.Fatalf("%s: type %q", where, r.Type)
				}
				temp, bucket := temps.For(qt, len(r.Logits))
				if bucket != r.Bucket || temp != r.Temperature {
					t.Errorf("%s: bucket %s T=%v, want %s T=%v", where, bucket, temp, r.Bucket, r.Temperature)
				}
				p := Softmax(r.Logits, temp)
				for i := range p {
					if p[i] != r.Probs[i] {
						t.Errorf("%s: p[%d] = %v (%08x), want %v (%08x)", where, i, p[i],
							math.Float32bits(p[i]), r.Probs[i], math.Float32bits(r.Probs[i]))
					}
				}
				want := c.Answer.Answers[r.QID]
				if got := Round4(float64(AnswerConfidence(p))); got != want.AnswerConfidence {
					t.Errorf("%s: answer_confidence %v, want %v", where, got, want.AnswerConfidence)
				}
				var conf float64
				switch qt {
				case Noul:
					conf = Round4(NoulConfidence(p[1]))
					if got := Round4(float64(p[1])); got != *want.Noul {
						t.Errorf("%s: noul %v, want %v", where, got, *want.Noul)
					}
				case Score:
					conf = Round4(float64(EntropyConfidence(p)))
					if got := Round4(ExpectedLevel(p)); got != *want.Score {
						t.Errorf("%s: score %v, want %v", where, got, *want.Score)
					}
				default:
					conf = Round4(float64(EntropyConfidence(p)))
				}
				if conf != want.Confidence {
					t.Errorf("%s: confidence %v, want %v", where, conf, want.Confidence)
				}
			}
		}
		t.Logf("%s: %d rows", name, rows)
	}
}

func TestBucket(t *testing.T) {
	for _, tc := range []struct {
		t    QType
		k    int
		want string
	}{
		{Choice, 1, "choice:2"}, {Choice, 2, "choice:2"}, {Choice, 3, "choice:3-5"},
		{Score, 5, "score:3-5"}, {Score, 6, "score:6-10"}, {Choice, 10, "choice:6-10"},
		{Choice, 11, "choice:11+"}, {Noul, 2, "noul:2"}, {Score, 40, "score:11+"},
	} {
		if got := Bucket(tc.t, tc.k); got != tc.want {
			t.Errorf("Bucket(%v, %d) = %q, want %q", tc.t, tc.k, got, tc.want)
		}
	}
}

func TestTemperatureLookup(t *testing.T) {
	temps := Temperatures{ByType: [3]float64{1.6, 1.25, 1.98}, ByOptions: map[string]float64{"choice:2": 1.9, "score:3-5": 0.5}}
	for _, tc := range []struct {
		t    QType
		k    int
		want float64
	}{
		{Choice, 2, 1.9}, {Choice, 1, 1.9}, {Choice, 4, 1.6}, {Score, 3, 0.5}, {Score, 2, 1.25}, {Noul, 2, 1.98},
	} {
		if got, _ := temps.For(tc.t, tc.k); got != tc.want {
			t.Errorf("For(%v, %d) = %v, want %v", tc.t, tc.k, got, tc.want)
		}
	}
}

// TestRound4 checks Python round(x, 4) semantics; the expected values were worked out by
// hand from the exact binary value of each input.
func TestRound4(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, tc := range []struct{ in, want float64 }{
		{0.03125, 0.0312},    // exactly 1/32: a true tie, goes to even
		{0.09375, 0.0938},    // exactly 3/32: a tie, 0.0938 is the even side
		{0.00005, 0.0001},    // the double is 5.00000000000000002396e-05, above the tie
		{0.00015, 0.0001},    // the double is 1.4999999999999998686e-04, below the tie
		{0.00025, 0.0003},    // the double is 2.5000000000000000520e-04, above the tie
		{0.99995, 1.0},       // the double is 0.99995000000000000551, above the tie
		{0.12345, 0.1235},    // the double is 0.12345000000000000417, above the tie
		{1.23456789, 1.2346}, //
		{-0.00004, negZero},  // Python keeps the sign: -0.0
		{2.5, 2.5},
	} {
		got := Round4(tc.in)
		if got != tc.want || math.Signbit(got) != math.Signbit(tc.want) {
			t.Errorf("Round4(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestSingleOption(t *testing.T) {
	p := Softmax([]float32{-3.25}, 1.9)
	if len(p) != 1 || p[0] != 1 {
		t.Fatalf("p = %v, want [1]", p)
	}
	if c := EntropyConfidence(p); c != 1 {
		t.Errorf("confidence %v, want 1", c)
	}
	if c := AnswerConfidence(p); c != 1 {
		t.Errorf("answer confidence %v, want 1", c)
	}
}

func TestPairwiseSumGrouping(t *testing.T) {
	// With 9 values numpy sums ((a0+a1)+(a2+a3))+((a4+a5)+(a6+a7)) + a8; 1e8 absorbs
	// the small terms differently from a left-to-right sum.
	a := []float32{1e8, 3, 3, 3, -1e8, 3, 3, 3, 3}
	// (1e8+3)=1e8, (3+3)=6 → 1e8+6=1.00000008e8; (-1e8+3)=-1e8+... exact sums:
	// r = [1e8,3,3,3,-1e8,3,3,3]: (1e8+3)=100000000 (ulp 8), (3+3)=6 → 100000008? 100000006 rounds to 100000008
	// (-1e8+3) = -99999997 → -1e8 (ulp 8 rounds to -100000000), (3+3)=6 → -99999994 → -99999992
	// 100000008 + -99999992 = 16, plus a8=3 → 19.
	if got := sum32(a); got != 19 {
		t.Errorf("sum32 = %v, want 19", got)
	}
}

// Round4's shortcut agrees with rounding the exact decimal expansion
// (strconv's fixed formatting, parsed back) bit for bit: over random values of
// every magnitude the shortcut takes, four-decimal values, and values a few
// ulps either side of a tie.
func TestRound4Shortcut(t *testing.T) {
	ref := func(x float64) float64 {
		r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 4, 64), 64)
		return r
	}
	seed := uint64(3)
	next := func() uint64 {
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return seed
	}
	unit := func() float64 { return float64(next()>>11) / (1 << 53) }
	for i := range 300000 {
		var x float64
		switch i % 4 {
		case 0:
			x = (unit()*2 - 1) * math.Pow(10, float64(int(next()%11)-6))
		case 1:
			x = unit()
		case 2:
			x = float64(int64(next()%2000000)-1000000) / 1e4
		default:
			// Near a tie k+0.5 (in units of 1e-4), a few ulps off.
			x = (float64(int64(next()%2000000)-1000000) + 0.5) / 1e4
			x = math.Float64frombits(math.Float64bits(x) + next()%9 - 4)
		}
		if got, want := Round4(x), ref(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("Round4(%v) = %v, want %v", x, got, want)
		}
	}
}
