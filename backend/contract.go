package backend

import (
	"fmt"
	"math"
	"reflect"
)

// The op contracts. Each Check function states, as code, which operands and
// parameters the Stream operation of the same name accepts; every backend
// calls it before recording the operation (and may add limits of its own,
// such as a kernel's largest head dimension), so the backends cannot drift
// apart on what is an error. Each returns nil or an error that wraps
// ErrShape and reads "op: backend: shape mismatch: detail", naming the op
// and the bad shape; backends prefix their own name ("cpu: ", …).
//
// Operands are tensors of the calling backend; required ones may not be
// nil. Whether a handle belongs to the backend (ErrForeignTensor) is the
// backend's check, made before these.

// shapeErr is the error of one broken contract.
func shapeErr(op, format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", op, ErrShape, fmt.Sprintf(format, args...))
}

// missing reports a required operand that is nil (a nil interface or a nil
// pointer in one), which would otherwise panic at its first Rows call.
func missing(op string, named ...any) error {
	for i := 0; i+1 < len(named); i += 2 {
		t, _ := named[i+1].(Tensor)
		if t == nil {
			return shapeErr(op, "%s is nil", named[i])
		}
		if v := reflect.ValueOf(t); v.Kind() == reflect.Pointer && v.IsNil() {
			return shapeErr(op, "%s is a nil %T", named[i], t)
		}
	}
	return nil
}

// aliased reports whether a and b are one tensor handle. A handle type Go
// cannot compare (a struct holding a slice) is never reported as aliased,
// rather than panicking in ==.
func aliased(a, b Tensor) bool {
	if a == nil || b == nil {
		return false
	}
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) {
		return false
	}
	if ta.Kind() == reflect.Pointer {
		return a == b // every backend's handle: no reflect.Value (it allocates)
	}
	if va := reflect.ValueOf(a); !va.Comparable() {
		return false
	}
	return a == b
}

func sameShape(a, b Tensor) bool { return a.Rows() == b.Rows() && a.Cols() == b.Cols() }

// known reports whether act is one of the Activation constants.
func known(act Activation) bool { return act <= ReLU }

// CheckDims is the contract of Stream.New: rows and cols ≥ 1, and at most
// math.MaxInt32 elements, which both 32-bit kernel indices and host slices
// can address.
func CheckDims(rows, cols int) error {
	if rows <= 0 || cols <= 0 || rows > math.MaxInt32/cols {
		return shapeErr("new", "[%d, %d]", rows, cols)
	}
	return nil
}

// CheckFromHost is the contract of Stream.FromHost: CheckDims, and n (the
// host slice's length) = rows·cols.
func CheckFromHost(rows, cols, n int) error {
	if err := CheckDims(rows, cols); err != nil {
		return err
	}
	if n != rows*cols {
		return shapeErr("fromHost", "%d values for [%d, %d]", n, rows, cols)
	}
	return nil
}

// CheckRead is the contract of Stream.Read: the destination holds n =
// rows·cols values.
func CheckRead(t Tensor, n int) error {
	if err := missing("read", "tensor", t); err != nil {
		return err
	}
	if n != t.Rows()*t.Cols() {
		return shapeErr("read", "destination holds %d values, tensor [%d, %d]", n, t.Rows(), t.Cols())
	}
	return nil
}

// CheckUpload is the contract of Backend.Upload: a shape CheckDims accepts,
// a dtype of F32, F16 or BF16 (else ErrDType), and size = rows·cols·dtype
// bytes of data.
func CheckUpload(name string, dtype DType, rows, cols, size int) error {
	if CheckDims(rows, cols) != nil {
		return fmt.Errorf("upload %s: %w: bad shape [%d, %d]", name, ErrShape, rows, cols)
	}
	switch dtype {
	case F32, F16, BF16:
	default:
		return fmt.Errorf("upload %s: %w %v", name, ErrDType, dtype)
	}
	if size != rows*cols*dtype.Size() {
		return fmt.Errorf("upload %s: %w: %d bytes for [%d, %d] %v", name, ErrShape, size, rows, cols, dtype)
	}
	return nil
}

// CheckGather is the contract of Stream.Gather: dst [len(index), table
// cols], every index in [0, table rows), and dst not the table.
func CheckGather(dst, table Tensor, index []int32) error {
	const op = "gather"
	if err := missing(op, "dst", dst, "table", table); err != nil {
		return err
	}
	d := table.Cols()
	if dst.Rows() != len(index) || dst.Cols() != d {
		return shapeErr(op, "dst [%d, %d] for %d rows of width %d", dst.Rows(), dst.Cols(), len(index), d)
	}
	rows := table.Rows()
	for i, r := range index {
		if r < 0 || int(r) >= rows {
			return shapeErr(op, "index[%d] = %d outside the table's %d rows", i, r, rows)
		}
	}
	if aliased(dst, table) {
		return shapeErr(op, "dst aliases the table")
	}
	return nil
}

// CheckLayerNorm is the contract of Stream.LayerNorm: dst shaped as x,
// weight [1, x cols], bias nil or [1, x cols], and eps finite and ≥ 0 (a
// NaN or infinite eps would turn every row into NaN or zero).
func CheckLayerNorm(dst, x, weight, bias Tensor, eps float32) error {
	const op = "layerNorm"
	if err := missing(op, "dst", dst, "x", x, "weight", weight); err != nil {
		return err
	}
	m, d := x.Rows(), x.Cols()
	switch {
	case dst.Rows() != m || dst.Cols() != d:
		return shapeErr(op, "dst [%d, %d], x [%d, %d]", dst.Rows(), dst.Cols(), m, d)
	case weight.Rows() != 1 || weight.Cols() != d:
		return shapeErr(op, "weight [%d, %d], want [1, %d]", weight.Rows(), weight.Cols(), d)
	case bias != nil && (bias.Rows() != 1 || bias.Cols() != d):
		return shapeErr(op, "bias [%d, %d], want [1, %d]", bias.Rows(), bias.Cols(), d)
	case !(eps >= 0) || math.IsInf(float64(eps), 0):
		return shapeErr(op, "eps %v, want finite and ≥ 0", eps)
	}
	return nil
}

// CheckLinear is the contract of Stream.Linear: x [M, K], weight [N, K],
// dst [M, N], bias nil or [1, N], dst neither x nor weight, and a known
// activation.
func CheckLinear(dst, x, weight, bias Tensor, act Activation) error {
	const op = "linear"
	if err := missing(op, "dst", dst, "x", x, "weight", weight); err != nil {
		return err
	}
	m, k, n := x.Rows(), x.Cols(), weight.Rows()
	switch {
	case weight.Cols() != k:
		return shapeErr(op, "x [%d, %d] · weightᵀ [%d, %d]", m, k, n, weight.Cols())
	case dst.Rows() != m || dst.Cols() != n:
		return shapeErr(op, "dst [%d, %d], want [%d, %d]", dst.Rows(), dst.Cols(), m, n)
	case bias != nil && (bias.Rows() != 1 || bias.Cols() != n):
		return shapeErr(op, "bias [%d, %d], want [1, %d]", bias.Rows(), bias.Cols(), n)
	case aliased(dst, x) || aliased(dst, weight):
		return shapeErr(op, "dst aliases an operand")
	case !known(act):
		return shapeErr(op, "unknown activation %v", act)
	}
	return nil
}

// CheckAdd is the contract of Stream.Add: dst, a and b of one shape.
func CheckAdd(dst, a, b Tensor) error {
	const op = "add"
	if err := missing(op, "dst", dst, "a", a, "b", b); err != nil {
		return err
	}
	if !sameShape(dst, a) || !sameShape(a, b) {
		return shapeErr(op, "dst [%d, %d], a [%d, %d], b [%d, %d]", dst.Rows(), dst.Cols(), a.Rows(), a.Cols(), b.Rows(), b.Cols())
	}
	return nil
}

// CheckActivate is the contract of Stream.Activate: dst shaped as x and a
// known activation.
func CheckActivate(dst, x Tensor, act Activation) error {
	const op = "activate"
	if err := missing(op, "dst", dst, "x", x); err != nil {
		return err
	}
	if !sameShape(dst, x) || !known(act) {
		return shapeErr(op, "dst [%d, %d], x [%d, %d], %v", dst.Rows(), dst.Cols(), x.Rows(), x.Cols(), act)
	}
	return nil
}

// CheckSoftmax is the contract of Stream.Softmax: dst shaped as x.
func CheckSoftmax(dst, x Tensor) error {
	const op = "softmax"
	if err := missing(op, "dst", dst, "x", x); err != nil {
		return err
	}
	if !sameShape(dst, x) {
		return shapeErr(op, "dst [%d, %d], x [%d, %d]", dst.Rows(), dst.Cols(), x.Rows(), x.Cols())
	}
	return nil
}

// CheckGeGLU is the contract of Stream.GeGLU: x [M, 2I] and dst [M, I].
func CheckGeGLU(dst, x Tensor) error {
	const op = "geglu"
	if err := missing(op, "dst", dst, "x", x); err != nil {
		return err
	}
	if x.Cols() != 2*dst.Cols() || x.Rows() != dst.Rows() {
		return shapeErr(op, "dst [%d, %d], x [%d, %d]: x needs twice dst's columns", dst.Rows(), dst.Cols(), x.Rows(), x.Cols())
	}
	return nil
}

// CheckRope is the contract of Stream.Rope: SeqLen, Heads and HeadDim ≥ 1,
// HeadDim even, qkv [B·SeqLen, 3·Heads·HeadDim] for some B (packed:
// [ΣLengths, 3·Heads·HeadDim] with every length in [1, SeqLen]), and Theta
// finite and > 0. A packed batch needs its Lengths; a right-padded one may
// give them, and qkv then has exactly len(Lengths)·SeqLen rows.
func CheckRope(qkv Tensor, p RopeParams) error {
	const op = "rope"
	if err := missing(op, "qkv", qkv); err != nil {
		return err
	}
	if p.Packed {
		if err := checkLengths(op, p.Lengths, p.SeqLen); err != nil {
			return err
		}
	}
	width := p.Heads * p.HeadDim
	switch {
	case p.SeqLen <= 0 || p.Heads <= 0 || p.HeadDim <= 0 || p.HeadDim%2 != 0:
		return shapeErr(op, "seqLen %d, heads %d, headDim %d (must be even)", p.SeqLen, p.Heads, p.HeadDim)
	case p.Packed && p.Lengths == nil:
		return shapeErr(op, "a packed batch without its lengths")
	case p.Packed && qkv.Cols() == 3*width && qkv.Rows() != p.Rows():
		return shapeErr(op, "qkv [%d, %d] for a packed batch of %d tokens in %d rows", qkv.Rows(), qkv.Cols(), p.Rows(), len(p.Lengths))
	case !p.Packed && p.Lengths != nil && qkv.Cols() == 3*width && qkv.Rows() != p.Rows():
		return shapeErr(op, "qkv [%d, %d] for %d rows of length %d", qkv.Rows(), qkv.Cols(), len(p.Lengths), p.SeqLen)
	case qkv.Cols() != 3*width || !p.Packed && qkv.Rows()%p.SeqLen != 0:
		return shapeErr(op, "qkv [%d, %d] for seqLen %d and 3·%d·%d columns", qkv.Rows(), qkv.Cols(), p.SeqLen, p.Heads, p.HeadDim)
	case !(p.Theta > 0) || math.IsInf(p.Theta, 0):
		return shapeErr(op, "theta %v", p.Theta)
	}
	return checkLengths(op, p.Lengths, p.SeqLen)
}

// checkLengths checks that every batch row's length is in [1, seqLen].
func checkLengths(op string, lengths []int, seqLen int) error {
	for b, n := range lengths {
		if n < 1 || n > seqLen {
			return shapeErr(op, "lengths[%d] = %d outside [1, %d]", b, n, seqLen)
		}
	}
	return nil
}

// CheckAttention is the contract of Stream.Attention: SeqLen, Heads and
// HeadDim ≥ 1, Radius ≥ 0, qkv [B·SeqLen, 3·Heads·HeadDim] with B =
// len(Lengths) (packed: [ΣLengths, 3·Heads·HeadDim]), dst [qkv's rows,
// Heads·HeadDim] and not qkv, and every length in [1, SeqLen].
func CheckAttention(dst, qkv Tensor, p AttentionParams) error {
	const op = "attention"
	if err := missing(op, "dst", dst, "qkv", qkv); err != nil {
		return err
	}
	if p.Packed {
		if err := checkLengths(op, p.Lengths, p.SeqLen); err != nil {
			return err
		}
	}
	width := p.Heads * p.HeadDim
	batch := len(p.Lengths)
	rows := p.Rows()
	switch {
	case p.SeqLen <= 0 || p.Heads <= 0 || p.HeadDim <= 0 || p.Radius < 0:
		return shapeErr(op, "seqLen %d, heads %d, headDim %d, radius %d", p.SeqLen, p.Heads, p.HeadDim, p.Radius)
	case p.Packed && qkv.Cols() == 3*width && qkv.Rows() != rows:
		return shapeErr(op, "qkv [%d, %d] for a packed batch of %d tokens in %d rows", qkv.Rows(), qkv.Cols(), rows, batch)
	case qkv.Cols() != 3*width || qkv.Rows() != rows:
		return shapeErr(op, "qkv [%d, %d] for %d rows of length %d and 3·%d·%d columns", qkv.Rows(), qkv.Cols(), batch, p.SeqLen, p.Heads, p.HeadDim)
	case dst.Rows() != qkv.Rows() || dst.Cols() != width:
		return shapeErr(op, "dst [%d, %d], want [%d, %d]", dst.Rows(), dst.Cols(), qkv.Rows(), width)
	case aliased(dst, qkv):
		return shapeErr(op, "dst aliases qkv")
	}
	return checkLengths(op, p.Lengths, p.SeqLen)
}

// CheckActFeatures is the contract of Stream.ActFeatures: cls [B, d], one
// count ≥ 1 per row (len(counts) = B), logits holding Σcounts values in
// any shape, dst [B, d+4], and dst neither cls nor logits.
func CheckActFeatures(dst, cls, logits Tensor, counts []int) error {
	const op = "actFeatures"
	if err := missing(op, "dst", dst, "cls", cls, "logits", logits); err != nil {
		return err
	}
	b, d := cls.Rows(), cls.Cols()
	total := 0
	for r, k := range counts {
		if k < 1 {
			return shapeErr(op, "counts[%d] = %d, want ≥ 1", r, k)
		}
		total += k
	}
	switch {
	case len(counts) != b || dst.Rows() != b || dst.Cols() != d+4 || logits.Rows()*logits.Cols() != total:
		return shapeErr(op, "dst [%d, %d], cls [%d, %d], logits [%d, %d], %d counts summing to %d",
			dst.Rows(), dst.Cols(), b, d, logits.Rows(), logits.Cols(), len(counts), total)
	case aliased(dst, cls) || aliased(dst, logits):
		return shapeErr(op, "dst aliases an operand")
	}
	return nil
}
