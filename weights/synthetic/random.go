package synthetic

import (
	"bufio"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"strings"

	"github.com/laya-metal/laya/weights"
)

// writeWeights streams model.safetensors: every tensor of the spec's
// checkpoint, seeded random values scaled as initFor says, one chunk in
// memory at a time.
func (s Spec) writeWeights(path string) (err error) {
	enc, head := s.configs()
	specs := append(weights.ExpectedTensors(enc, head), weights.TensorSpec{Name: weights.TemperatureBuffer, Shape: []int{3}})
	headers := make([]weights.TensorHeader, len(specs))
	for i, spec := range specs {
		name := spec.Name
		if s.MLXNames {
			name = weights.MLXName(name)
		}
		headers[i] = weights.TensorHeader{Name: name, DType: s.dtype(), Shape: spec.Shape}
	}
	meta := map[string]string{"format": "pt"}
	if s.MLXNames {
		meta["format"] = "mlx"
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("synthetic: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("synthetic: %w", cerr)
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	const chunk = 1 << 16
	values := make([]float32, chunk)
	var encoded []byte
	err = weights.WriteSafetensors(bw, meta, headers, func(i int, w io.Writer) error {
		init := initFor(specs[i])
		rng := newSplitMix(s.Seed ^ nameHash(specs[i].Name))
		for left := headers[i].Len(); left > 0; {
			n := min(left, chunk)
			for j := range values[:n] {
				values[j] = init.sample(rng)
			}
			encoded = weights.EncodeFloat32(encoded[:0], values[:n], s.dtype())
			if _, err := w.Write(encoded); err != nil {
				return err
			}
			left -= n
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("synthetic: %w", err)
	}
	return nil
}

// tensorInit is the distribution of one tensor: mean + std·N(0,1).
type tensorInit struct{ mean, std float64 }

func (t tensorInit) sample(r *splitMix) float32 {
	if t.std == 0 {
		return float32(t.mean)
	}
	return float32(t.mean + t.std*r.normal())
}

// initFor picks scales after the oracle tiny-en checkpoint (std measured
// per tensor): embeddings 1.0, norm weights 1±0.15, biases ~0.08, linear
// weights ~1/sqrt(fan_in), a wider final scorer so option logits spread.
func initFor(spec weights.TensorSpec) tensorInit {
	name := spec.Name
	switch {
	case name == weights.TemperatureBuffer:
		return tensorInit{1, 0}
	case strings.HasSuffix(name, "tok_embeddings.weight"):
		return tensorInit{0, 1}
	case name == "type_emb.weight":
		return tensorInit{0, 0.5}
	case name == "scorer.3.bias":
		return tensorInit{0, 0.25}
	case name == "act_head.2.bias":
		return tensorInit{0, 0.4}
	case strings.Contains(name, "norm") || name == "scorer.0.weight" || name == "scorer.0.bias":
		if strings.HasSuffix(name, ".bias") {
			return tensorInit{0, 0.08}
		}
		return tensorInit{1, 0.15}
	case strings.HasSuffix(name, "bias"):
		return tensorInit{0, 0.08}
	}
	fanIn := 1.0
	if len(spec.Shape) == 2 {
		fanIn = float64(spec.Shape[1])
	}
	gain := 1.0
	if name == "scorer.3.weight" {
		gain = 4
	}
	return tensorInit{0, gain / math.Sqrt(fanIn)}
}

// splitMix is SplitMix64 (Steele, Lea, Flood 2014): tiny, fast and fully
// determined by its seed, unlike the math/rand global source.
type splitMix struct {
	state uint64
	spare float64
	has   bool
}

func newSplitMix(seed uint64) *splitMix { return &splitMix{state: seed} }

func (r *splitMix) next() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// normal draws N(0,1) by Box–Muller, two values per pair of uniforms.
func (r *splitMix) normal() float64 {
	if r.has {
		r.has = false
		return r.spare
	}
	u1 := (float64(r.next()>>11) + 1) / (1 << 53) // (0, 1]
	u2 := float64(r.next()>>11) / (1 << 53)
	radius := math.Sqrt(-2 * math.Log(u1))
	sin, cos := math.Sincos(2 * math.Pi * u2)
	r.spare, r.has = radius*sin, true
	return radius * cos
}

func nameHash(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}
