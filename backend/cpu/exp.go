package cpu

import "math"

// expNonPositive returns e^x for x ≤ 0 (a softmax's max-subtracted score)
// in float64, to about 1e-13 relative, for rounding to float32: the float32
// it rounds to is math.Exp's except, rarely, at a rounding tie of the two
// (both are faithful). It is 3–5× faster than math.Exp: no special cases
// beyond underflow, a fixed-degree polynomial.
//
// e^x = 2^n · e^r with n = round(x·log2 e) and r = x − n·ln 2 (ln 2 split
// in two, Cody–Waite, so r is exact to ~1e-16), |r| ≤ ln2/2; e^r is its
// Taylor polynomial of degree 11 (remainder < 0.35¹²/12! ≈ 6e-15).
func expNonPositive(x float64) float64 {
	if x < -745 { // below float64's smallest subnormal; also NaN-free inputs
		return 0
	}
	const (
		log2e = 1.4426950408889634
		ln2Hi = 6.93147180369123816490e-01 // fdlibm's split of ln 2
		ln2Lo = 1.90821492927058770002e-10
	)
	n := math.Floor(x*log2e + 0.5)
	r := (x - n*ln2Hi) - n*ln2Lo
	p := 1.0 / 39916800
	p = p*r + 1.0/3628800
	p = p*r + 1.0/362880
	p = p*r + 1.0/40320
	p = p*r + 1.0/5040
	p = p*r + 1.0/720
	p = p*r + 1.0/120
	p = p*r + 1.0/24
	p = p*r + 1.0/6
	p = p*r + 0.5
	p = p*r + 1
	p = p*r + 1
	ni := int64(n)
	if ni < -1022 {
		// A subnormal result: scale in two steps.
		return p * math.Float64frombits(uint64(ni+1022+1023)<<52) * 0x1p-1022
	}
	return p * math.Float64frombits(uint64(ni+1023)<<52)
}
