package forwardtest

import "github.com/laya-metal/laya/backend"

// Buckets wraps be so that its streams ask for token buckets of bucket
// tokens (backend.TokenBucketer), as a GPU backend's do, on a backend that
// computes without one (cpu), and appends to *gathered how many tokens each
// Gather takes: the encoder's embedding lookup, whose token count shows the
// fill row.
func Buckets(be backend.Backend, bucket int, gathered *[]int) backend.Backend {
	return bucketBackend{be, bucket, gathered}
}

type bucketBackend struct {
	backend.Backend
	bucket   int
	gathered *[]int
}

func (b bucketBackend) NewStream() backend.Stream { return bucketStream{b.Backend.NewStream(), b} }

type bucketStream struct {
	backend.Stream
	b bucketBackend
}

func (s bucketStream) PacksRows() bool  { return backend.PacksRows(s.Stream) }
func (s bucketStream) TokenBucket() int { return s.b.bucket }

func (s bucketStream) Gather(dst, table backend.Tensor, index []int32) {
	*s.b.gathered = append(*s.b.gathered, len(index))
	s.Stream.Gather(dst, table, index)
}
