package serve

import (
	"math"
	"strconv"
	"strings"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/pyjson"
)

// confidenceGate is a request's min_confidence (upstream laya/confidence.py): one
// threshold for every answer, or a map from option-count bucket ("choice:3-5",
// "score:11+", "noul:2") to threshold with an optional "default" (#394). A bucket
// the map does not name is gated at "default", else at 0.0: it never abstains by
// surprise.
type confidenceGate struct {
	scalar  float64
	buckets map[string]float64 // nil for a scalar gate
}

// gateSizes are the option-count spellings of upstream's temp_bucket.
var gateSizes = []string{"2", "3-5", "6-10", "11+"}

// gateBucket reports whether key can name the bucket of some answer: a noul is
// always two options, so only "noul:2" can (#1002: a key no answer can match
// would silently gate nothing).
func gateBucket(key string) bool {
	typ, size, ok := strings.Cut(key, ":")
	switch {
	case !ok:
		return false
	case typ == "noul":
		return size == "2"
	case typ == "choice" || typ == "score":
		for _, s := range gateSizes {
			if size == s {
				return true
			}
		}
	}
	return false
}

func gateThreshold(v pyjson.Value) (float64, bool) {
	f, err := strconv.ParseFloat(v.Literal(), 64)
	return f, v.Kind() == pyjson.NumberKind && err == nil && !math.IsNaN(f) && f >= 0 && f <= 1
}

// parseMinConfidence reads the request's min_confidence: a number in [0, 1], or
// a non-empty object of bucket → number in [0, 1] whose every key names a bucket.
func parseMinConfidence(v pyjson.Value) (*confidenceGate, *apiError) {
	if v.Kind() != pyjson.ObjectKind {
		f, ok := gateThreshold(v)
		if !ok {
			return nil, errorf(422, "'min_confidence' must be a number between 0.0 and 1.0, or an object of bucket -> number")
		}
		return &confidenceGate{scalar: f}, nil
	}
	if len(v.Members()) == 0 {
		return nil, errorf(422, "'min_confidence' must be a non-empty object of bucket -> number, such as {\"choice:3-5\": 0.6, \"default\": 0.5}")
	}
	g := &confidenceGate{buckets: map[string]float64{}}
	for _, m := range v.Members() {
		if m.Key != "default" && !gateBucket(m.Key) {
			return nil, errorf(422, "'min_confidence' key %s names no bucket; use \"default\", \"noul:2\" or choice/score with :2, :3-5, :6-10 or :11+", pyjson.StrRepr(m.Key))
		}
		f, ok := gateThreshold(m.Value)
		if !ok {
			return nil, errorf(422, "'min_confidence' %s must be a number between 0.0 and 1.0", pyjson.StrRepr(m.Key))
		}
		g.buckets[m.Key] = f
	}
	return g, nil
}

// threshold is the threshold answer qid of type typ is gated at.
func (g *confidenceGate) threshold(res *laya.Result, qid, typ string) float64 {
	if g.buckets == nil {
		return g.scalar
	}
	k := 2
	switch typ {
	case "choice":
		if c, err := res.Choice(qid); err == nil {
			k = len(c.Probabilities)
		}
	case "score":
		if sc, err := res.Score(qid); err == nil {
			k = len(sc.Probabilities)
		}
	}
	qt, _ := heads.ParseQType(typ)
	if t, ok := g.buckets[heads.Bucket(qt, k)]; ok {
		return t
	}
	return g.buckets["default"]
}
