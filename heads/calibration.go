package heads

import (
	"math"
	"strconv"
)

// Calibration turns a question's raw option logits into the numbers upstream Laya reports.
// The arithmetic follows upstream laya/common.py and laya/agent.py at 8ef5b2dd
// (temp_bucket, confidence_from_probs, answer_confidence, Agent._decode_answers) run under
// numpy ≥ 2, where a float32 array combined with a Python float stays float32 (NEP 50).
// Reproducing that precision, not float64, is what makes the 4th decimal match: see
// testdata/oracle/README.md, fact 4.

// QType is the question type; its value is the row of type_emb and the index into the
// per-type temperatures.
type QType int

// The three question types, in upstream's QTYPES order.
const (
	Choice QType = iota
	Score
	Noul
)

// String returns the type word used in prompts and bucket names.
func (t QType) String() string {
	switch t {
	case Choice:
		return "choice"
	case Score:
		return "score"
	case Noul:
		return "noul"
	}
	return "qtype(" + strconv.Itoa(int(t)) + ")"
}

// ParseQType maps "choice", "score" or "noul" to its QType.
func ParseQType(s string) (QType, bool) {
	switch s {
	case "choice":
		return Choice, true
	case "score":
		return Score, true
	case "noul":
		return Noul, true
	}
	return 0, false
}

// Bucket returns the temperature_by_options key for a question of type t with k real
// options: "choice:2", "score:3-5", "noul:2", "choice:6-10", "choice:11+".
func Bucket(t QType, k int) string {
	size := "11+"
	switch {
	case k <= 2:
		size = "2"
	case k <= 5:
		size = "3-5"
	case k <= 10:
		size = "6-10"
	}
	return t.String() + ":" + size
}

// Temperatures are a checkpoint's effective (already clamped) calibration temperatures.
type Temperatures struct {
	ByType    [3]float64         // indexed by QType
	ByOptions map[string]float64 // keyed by Bucket; wins over ByType
}

// For returns the temperature applied to a question of type t with k options: the bucket
// entry when the checkpoint has one, else the per-type value.
func (c Temperatures) For(t QType, k int) (temperature float64, bucket string) {
	bucket = Bucket(t, k)
	if v, ok := c.ByOptions[bucket]; ok {
		return v, bucket
	}
	if t < 0 || int(t) >= len(c.ByType) {
		return 1, bucket
	}
	return c.ByType[t], bucket
}

// Softmax returns softmax(logits / temperature) in float32, as upstream computes
// `z = logits[r, :k] / T; p = exp(z - z.max()); p /= p.sum()` on a float32 array: T is
// cast to float32 first and every step rounds to float32.
func Softmax(logits []float32, temperature float64) []float32 {
	if len(logits) == 0 {
		return nil
	}
	t32 := float32(temperature)
	z := make([]float32, len(logits))
	zmax := float32(math.Inf(-1))
	for i, l := range logits {
		z[i] = l / t32
		if z[i] > zmax {
			zmax = z[i]
		}
	}
	for i := range z {
		z[i] = exp32(z[i] - zmax)
	}
	sum := sum32(z)
	for i := range z {
		z[i] /= sum
	}
	return z
}

// EntropyConfidence is confidence_from_probs: 1 − H(p)/log k clipped to [0, 1], all in
// float32 (the entropy sum, the division by float32(log k) and the subtraction), 1 when
// there is a single option.
func EntropyConfidence(p []float32) float32 {
	k := len(p)
	if k < 2 {
		return 1
	}
	terms := make([]float32, k)
	for i, v := range p {
		clipped := min(max(v, float32(1e-12)), 1)
		terms[i] = float32(v * log32(clipped))
	}
	ent := -sum32(terms)
	c := 1 - ent/float32(math.Log(float64(k)))
	return min(max(c, 0), 1)
}

// AnswerConfidence is max(p) clipped to [0, 1]; 1 when there are no options.
func AnswerConfidence(p []float32) float32 {
	if len(p) == 0 {
		return 1
	}
	m := p[0]
	for _, v := range p[1:] {
		m = max(m, v)
	}
	return min(max(m, 0), 1)
}

// Argmax returns the index of the first largest probability, like numpy's argmax.
func Argmax(p []float32) int {
	best := 0
	for i, v := range p {
		if v > p[best] {
			best = i
		}
	}
	return best
}

// ExpectedLevel is a score question's expected zero-based level, Σ i·p_i. numpy promotes
// arange (int64) times float32 to float64, so the products and their sum are float64.
func ExpectedLevel(p []float32) float64 {
	terms := make([]float64, len(p))
	for i, v := range p {
		terms[i] = float64(float64(i) * float64(v))
	}
	return sum64(terms)
}

// NoulConfidence is max(p_true, 1 − p_true) in float64, as upstream computes it on
// Python floats.
func NoulConfidence(pTrue float32) float64 {
	p := float64(pTrue)
	return max(p, 1-p)
}

// Round4 is Python's round(x, 4): correctly rounded on the exact binary value of x, ties
// to even. strconv's fixed-precision formatting rounds the exact decimal expansion the
// same way, and parsing it back gives the nearest double, as Python's round does.
//
// Answers round a handful of values each, so the common case takes a shortcut: for
// |x| < 1e5, x·10⁴ computed in float64 is within 2.4e-7 of the exact product, so
// unless its fraction lies within 1e-6 of one half the exact value rounds to the same
// integer k, and k/10⁴ divided in float64 is the double nearest that decimal, which is
// what parsing its text gives.
func Round4(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	if math.Abs(x) < 1e5 {
		y := x * 1e4
		k := math.Floor(y)
		if f := y - k; math.Abs(f-0.5) > 1e-6 {
			if f > 0.5 {
				k++
			}
			if k == 0 {
				return math.Copysign(0, x) // "-0.0000" parses to -0
			}
			return k / 1e4
		}
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 4, 64), 64)
	if err != nil {
		return x // unreachable: strconv wrote the text it parses
	}
	return r
}

// exp32 and log32 are numpy's float32 exp and log as run on x86-64 with AVX2+FMA3 or
// AVX512F, the machines upstream's numbers come from: simd_exp_FLOAT and simd_log_FLOAT in
// numpy/_core/src/umath/loops_exponent_log.dispatch.c.src, constants from npy_simd_data.h.
// They are rational approximations with up to 2.52 (exp) and 3.83 (log) ulp of error, so
// a correctly rounded exp differs from them in the last bit about half the time, and the
// goldens' float32 probabilities only come out bit-identical with the same arithmetic.
const (
	npyLog2E      float32 = 1.442695040888963407359924681001892137
	npyLogE2      float32 = 0.693147180559945309417232121458176568
	npySqrt1_2    float32 = 0.707106781186547524400844362104849039
	npyRintMagic  float32 = 0x1.8p+23
	npyCodyWaite1 float32 = -6.93145752e-1
	npyCodyWaite2 float32 = -1.42860677e-6
	npyExpXMax    float32 = 88.72283935546875
	npyExpXMin    float32 = -103.97208404541015625
)

var (
	npyExpP = [6]float32{
		9.999999999980870924916e-01, 7.257664613233124478488e-01, 2.473615434895520810817e-01,
		5.114512081637298353406e-02, 6.757896990527504603057e-03, 5.082762527590693718096e-04,
	}
	npyExpQ = [3]float32{1, -2.742335390411667452936e-01, 2.159509375685829852307e-02}
	npyLogP = [6]float32{
		0, 9.999999999999998702752e-01, 2.112677543073053063722e+00,
		1.480000633576506585156e+00, 3.808837741388407920751e-01, 2.589979117907922693523e-02,
	}
	npyLogQ = [6]float32{
		1, 2.612677543073109236779e+00, 2.453006071784736363091e+00,
		9.864942958519418960339e-01, 1.546476374983906719538e-01, 5.875095403124574342950e-03,
	}
)

func exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x >= npyExpXMax:
		return float32(math.Inf(1))
	case x <= npyExpXMin:
		return 0
	}
	// float32(...) around each product keeps Go from fusing it into an FMA on arm64,
	// where numpy's x86 code rounds the product on its own.
	quadrant := float32(x * npyLog2E)
	quadrant = float32(quadrant+npyRintMagic) - npyRintMagic
	x = fma32(quadrant, npyCodyWaite1, x)
	x = fma32(quadrant, npyCodyWaite2, x)
	num := fma32(npyExpP[5], x, npyExpP[4])
	num = fma32(num, x, npyExpP[3])
	num = fma32(num, x, npyExpP[2])
	num = fma32(num, x, npyExpP[1])
	num = fma32(num, x, npyExpP[0])
	den := fma32(npyExpQ[2], x, npyExpQ[1])
	den = fma32(den, x, npyExpQ[0])
	return scalef32(num/den, int(quadrant))
}

func log32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x < 0:
		return float32(math.NaN())
	case x == 0:
		return float32(math.Inf(-1))
	case math.IsInf(float64(x), 1):
		return x
	}
	frac, exp := math.Frexp(float64(x)) // frac in [0.5, 1), exact for every float32
	mant, exponent := float32(frac), float32(exp)
	if mant <= npySqrt1_2 {
		mant += mant
		exponent--
	}
	mant--
	num := fma32(npyLogP[5], mant, npyLogP[4])
	num = fma32(num, mant, npyLogP[3])
	num = fma32(num, mant, npyLogP[2])
	num = fma32(num, mant, npyLogP[1])
	num = fma32(num, mant, npyLogP[0])
	den := fma32(npyLogQ[5], mant, npyLogQ[4])
	den = fma32(den, mant, npyLogQ[3])
	den = fma32(den, mant, npyLogQ[2])
	den = fma32(den, mant, npyLogQ[1])
	den = fma32(den, mant, npyLogQ[0])
	return fma32(exponent, npyLogE2, num/den)
}

// scalef32 returns v·2^n exactly (or the correctly rounded subnormal), like vscalefps.
func scalef32(v float32, n int) float32 {
	return float32(math.Ldexp(float64(v), n))
}

// fma32 is a single-rounding float32 fused multiply-add. The float32 product is exact in
// float64 and the float64 sum is corrected with its TwoSum error where rounding it again
// to float32 would land on a tie.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	bv := s - p
	errTerm := (p - (s - bv)) + (float64(c) - bv)
	r := float32(s)
	if errTerm == 0 || math.IsInf(s, 0) {
		return r
	}
	other := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), s-float64(r))))
	if float64(r) == s || (float64(r)+float64(other))/2 != s {
		return r // s is not halfway between two float32s: one rounding is enough
	}
	// s is a tie only because the exact sum was rounded; the error term says which side
	// the exact value lies on.
	if (errTerm > 0) == (float64(other) > float64(r)) {
		return other
	}
	return r
}

// sum32 adds like numpy's float32 add.reduce: the result starts at the identity 0 and
// gets the pairwise sum of all elements (numpy/_core/src/umath/loops_utils.h.src,
// pairwise_sum with 8 accumulators and PW_BLOCKSIZE 128). The grouping matters for the
// last bit once there are 8 or more options.
func sum32(a []float32) float32 {
	return 0 + pairwise(a)
}

// sum64 is sum32 for float64 arrays.
func sum64(a []float64) float64 { return pairwise(a) }

// pairwise is numpy's pairwise_sum in the element type: every addition rounds
// to T, as numpy's typed loops do.
func pairwise[T float32 | float64](a []T) T {
	n := len(a)
	switch {
	case n < 8:
		var res T
		for _, v := range a {
			res += v
		}
		return res
	case n <= pairwiseBlock:
		var r [8]T
		copy(r[:], a[:8])
		i := 8
		for ; i < n-n%8; i += 8 {
			for j := range r {
				r[j] += a[i+j]
			}
		}
		res := ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
		for ; i < n; i++ {
			res += a[i]
		}
		return res
	default:
		n2 := n / 2
		n2 -= n2 % 8
		return pairwise(a[:n2]) + pairwise(a[n2:])
	}
}

// pairwiseBlock is numpy's PW_BLOCKSIZE.
const pairwiseBlock = 128
