package laya

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/laya-metal/laya/backend"
	_ "github.com/laya-metal/laya/backend/cpu" // registers "cpu"; "metal" comes from backend_darwin_arm64.go
	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/internal/forwardpass"
	"github.com/laya-metal/laya/weights"
)

// errBadRow reports a token row the network cannot run (a bug in sequence
// building, or a hand-made row).
var errBadRow = errors.New("laya: invalid token row")

// forwardRow is one question's token row as built by build_sequence: its
// unpadded ids ([CLS] … [SEP]), the position of each option's [MASK] and its
// question type. It is the row the batch layout lays out, so a batch of
// them goes to forwardpass.Layout as it is.
type forwardRow = forwardpass.Row

// rowOutput is what the network says about one row.
type rowOutput struct {
	Logits    []float32 // one per marker, raw (no temperature)
	ActLogits []float32 // n_act; nil unless networkOptions.ActLogits
	ActProbs  []float32 // softmax(ActLogits)
}

type networkOptions struct {
	Backend string // "auto" (default): backend.OpenAuto
	// Instance, when set, is used instead of opening Backend; the network
	// does not close it (WithBackendInstance).
	Instance backend.Backend
	// BatchSize is the most rows of a forward batch; 0 means the
	// backend's (backend.BatchSizer: rows, and tokens), else 16.
	BatchSize int
	// PadID fills the right padding of a batch: the tokenizer's [PAD] id, as
	// upstream's collate_items uses. Padded keys are masked everywhere, so it
	// never changes an answer, but it must be a vocabulary id.
	PadID int
	// ActLogits reads the act head's logits back into rowOutput.ActLogits.
	// Answers use only their softmax, so only tests that hold the logits
	// to upstream's ask for them.
	ActLogits bool
}

// defaultBatchSize is laya-mlx's batch size, the rows of a batch on a
// backend that is no backend.BatchSizer.
const defaultBatchSize = 16

// network is ModernBERT + decision head + scorer + act head on one backend.
type network struct {
	be        backend.Backend
	ownsBe    bool                // be was opened by name here, so Close closes it
	auto      *backend.AutoChoice // what "auto" chose; nil when a backend was named
	mapping   []byte              // the checkpoint's file mapping, if be was handed it
	parts     forwardpass.Parts   // encoder, decision head, scorer, act head
	batchSize int                 // rows of a batch at most
	// batchTokens, where not 0, ends a batch before a row that would take
	// its tokens past it (backend.BatchSizer): never its first row.
	batchTokens int
	padID       int32
	vocab       int
	maxLen      int // max_position_embeddings
	nAct        int
	actLogits   bool               // read ActLogits back (networkOptions.ActLogits)
	gate        backend.RefineGate // whether running reduced first pays (stream)
	// now is the clock runRows times its batches by for the gate
	// (RefineGate.ObserveCost); nil is time.Now. A test sets its own, so
	// that the costs it sets do not depend on the machine's load.
	now func() time.Time
}

func newNetwork(ckpt *weights.Checkpoint, opts networkOptions) (*network, error) {
	name := opts.Backend
	if name == "" {
		name = backend.Auto
	}
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("laya: batch size %d, want ≥ 1 (0: the backend's)", opts.BatchSize)
	}
	vocab := ckpt.Encoder.VocabSize
	if opts.PadID < 0 || opts.PadID >= vocab {
		return nil, fmt.Errorf("laya: pad id %d outside the vocabulary [0, %d)", opts.PadID, vocab)
	}
	be, owns := opts.Instance, false
	var choice *backend.AutoChoice
	if be == nil {
		var err error
		if name == backend.Auto {
			var c backend.AutoChoice
			be, c, err = backend.OpenAuto()
			choice = &c
		} else {
			be, err = backend.Open(name)
		}
		if err != nil {
			return nil, fmt.Errorf("laya: %w", err)
		}
		owns = true
	}
	n := &network{
		be:        be,
		ownsBe:    owns,
		auto:      choice,
		batchSize: opts.BatchSize,
		padID:     int32(opts.PadID),
		vocab:     vocab,
		maxLen:    ckpt.Encoder.MaxPositionEmbeddings,
		nAct:      ckpt.Head.NAct,
		actLogits: opts.ActLogits,
	}
	if n.batchSize == 0 {
		n.batchSize = defaultBatchSize
		if bs, ok := be.(backend.BatchSizer); ok {
			if rows, tokens := bs.BatchLimits(); rows > 0 {
				n.batchSize, n.batchTokens = rows, max(tokens, 0)
			}
		}
	}
	if ckpt.Weights != nil {
		n.mapping = ckpt.Weights.Mapping()
	}
	var err error
	n.parts, err = forwardpass.NewParts(be, ckpt)
	if err != nil {
		n.close()
		return nil, fmt.Errorf("laya: %s: %w", ckpt.Dir, err)
	}
	return n, nil
}

// close releases the backend when the network opened it; a backend passed
// in by WithBackendInstance belongs to the caller, and is only told to
// forget the checkpoint's mapping, which is unmapped next and whose address
// the next checkpoint may get.
func (n *network) close() error {
	if !n.ownsBe {
		if f, ok := n.be.(backend.MappingForgetter); ok && n.mapping != nil {
			f.ForgetMapping(n.mapping)
		}
		return nil
	}
	return n.be.Close()
}

// forward runs rows in batches (batchEnd); outputs are in row order.
//
// Rows run shortest first, so that a padded batch holds rows of similar lengths:
// rows of mixed sizes (questions with few and many options, requests of one
// PredictBatch) would otherwise pad every short row to the longest one. Rows never
// see each other in a batch, so the order changes no answer.
func (n *network) forward(ctx context.Context, rows []forwardRow) ([]rowOutput, error) {
	return n.forwardRows(ctx, rows, true)
}

// forwardExact is forward on the backend's own precision only, never a
// reduced one (backend.Refiner): for callers that compare rows with each
// other, where a near-tie between two rows' answers is not one within a row.
// A row whose outputs overflow the backend's precision still runs again in
// a wider one (widen), as in forward: its only other answer is an error.
func (n *network) forwardExact(ctx context.Context, rows []forwardRow) ([]rowOutput, error) {
	return n.forwardRows(ctx, rows, false)
}

// forwardRows is runRows, then widen on the rows still not finite.
func (n *network) forwardRows(ctx context.Context, rows []forwardRow, reduce bool) ([]rowOutput, error) {
	out, err := n.runRows(ctx, rows, reduce)
	if err != nil {
		return nil, err
	}
	if err := n.widen(ctx, rows, out); err != nil {
		return nil, err
	}
	return out, nil
}

// runRows runs rows in batches, reduced first where reduce and the backend
// offers it (stream), refining the near-ties of reduced batches.
func (n *network) runRows(ctx context.Context, rows []forwardRow, reduce bool) ([]rowOutput, error) {
	for i, r := range rows {
		if err := n.checkRow(r); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
	}
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(rows[a].IDs) - len(rows[b].IDs) })
	sorted := make([]forwardRow, len(rows))
	for i, k := range order {
		sorted[i] = rows[k]
	}
	out := make([]rowOutput, len(rows))
	var near, kept []int   // rows of reduced-precision batches to run again (refine), and the others
	var base, used float32 // the backend's margin, and the largest the batches used
	_, refiner := n.be.(backend.Refiner)
	for start, end, tokens := 0, 0, 0; start < len(sorted); start = end {
		end, tokens = n.batchEnd(start, len(sorted), func(i int) int { return len(sorted[i].IDs) })
		s, margin, declined := n.stream(tokens, reduce)
		began := n.clock()
		res, err := n.runBatch(ctx, s, sorted[start:end], nil)
		if err != nil {
			return nil, err
		}
		if refiner {
			// What each kind of run costs is the gate's too: reducing a
			// large batch may pay past MaxShare's near-ties.
			n.gate.ObserveCost(margin > 0, tokens, n.clock().Sub(began))
		}
		m := n.gate.Margin(max(margin, declined))
		again := 0
		for i, o := range res {
			k := order[start+i]
			out[k] = o
			switch {
			case margin > 0 && o.nearTie(m):
				near = append(near, k)
				again++
			case margin > 0:
				kept = append(kept, k)
			case declined > 0 && o.nearTie(m):
				// Run plain because the gate was closed: its near-ties
				// keep the gate's account current.
				again++
			}
		}
		if margin > 0 || declined > 0 {
			n.gate.Observe(end-start, again)
		}
		if margin > 0 {
			base, used = max(base, margin), max(used, m)
		}
	}
	// The refined rows show how far the reduced run moved their gaps; where
	// that grows the margin (RefineGate), the rows kept under the smaller
	// one are looked at again.
	for len(near) > 0 {
		reduced := make([][]float32, len(near))
		for i, k := range near {
			reduced[i] = out[k].Logits
		}
		if err := n.refine(ctx, rows, near, out); err != nil {
			return nil, err
		}
		for i, k := range near {
			n.gate.ObserveSpread(backend.Spread(reduced[i], out[k].Logits))
		}
		m := n.gate.Margin(base)
		if m <= used {
			break
		}
		used = m
		var still []int
		near = nil
		for _, k := range kept {
			if out[k].nearTie(m) {
				near = append(near, k)
			} else {
				still = append(still, k)
			}
		}
		if len(near) > 0 {
			// The gate's account: these rows of reduced batches run again too.
			n.gate.Observe(len(kept), len(near))
		}
		kept = still
	}
	return out, nil
}

// stream is the stream a batch of tokens tokens runs on, and the margin
// under which its rows' answers are refined: the backend's reduced
// precision where it has one for a batch of this many tokens
// (backend.Refiner) and the network's gate is open, else a plain stream
// (margin 0). declined is the margin of a reduced stream the gate turned
// down (else 0).
func (n *network) stream(tokens int, reduce bool) (s backend.Stream, margin, declined float32) {
	if r, ok := n.be.(backend.Refiner); ok && reduce {
		// The gate is asked only for batches the backend would reduce:
		// small ones, which never run reduced, leave its account alone.
		if s, margin := r.ReducedStream(tokens); s != nil {
			if n.gate.Open(tokens) {
				return s, margin, 0
			}
			s.Close()
			return n.be.NewStream(), 0, margin
		}
	}
	return n.be.NewStream(), 0, 0
}

// nearTie reports whether a row run in a reduced precision may answer
// differently in the backend's own: its option logits are a near-tie, or an
// act probability is not finite.
func (o rowOutput) nearTie(margin float32) bool {
	return !backend.Finite(o.ActProbs) || backend.NearTie(o.Logits, margin)
}

// finite reports whether every output an answer is made of (the option
// logits, the act probabilities) is finite.
func (o rowOutput) finite() bool {
	return backend.Finite(o.Logits) && backend.Finite(o.ActProbs)
}

// refine runs rows[idx] again in the backend's own precision (which holds
// the parity gate) and puts their outputs in out: the near-ties of batches
// run in a reduced precision. Rows never see each other in a batch, so
// batches of only these rows answer them in this precision as any batch
// would (to its rounding: a batch of other sizes may take other kernels).
// A row this leaves non-finite is widen's, once, with the others.
func (n *network) refine(ctx context.Context, rows []forwardRow, idx []int, out []rowOutput) error {
	if len(idx) == 0 {
		return nil
	}
	again := make([]forwardRow, len(idx))
	for i, k := range idx {
		again[i] = rows[k]
	}
	res, err := n.runRows(ctx, again, false)
	if err != nil {
		return err
	}
	for i, k := range idx {
		out[k] = res[i]
	}
	return nil
}

// widen runs the rows whose outputs are not finite again on the backend's
// wider precision (backend.Widener), in batches (batchEnd), shortest
// first, and puts their outputs in out: an activation past the range of
// the backend's own precision (fp16's 65504 in the cuda backend's GEMM
// operands) makes a row's outputs NaN there, where a wider one answers it
// as upstream does. Finite rows never run again. A row still not finite,
// or any on a backend that is no Widener, keeps its outputs, which the
// answer reports as ErrNonFinite.
func (n *network) widen(ctx context.Context, rows []forwardRow, out []rowOutput) error {
	w, ok := n.be.(backend.Widener)
	if !ok {
		return nil
	}
	var idx []int
	for k, o := range out {
		if !o.finite() {
			idx = append(idx, k)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return len(rows[a].IDs) - len(rows[b].IDs) })
	for start, end := 0, 0; start < len(idx); start = end {
		s := w.WideStream()
		if s == nil {
			return nil
		}
		end, _ = n.batchEnd(start, len(idx), func(i int) int { return len(rows[idx[i]].IDs) })
		batch := idx[start:end]
		again := make([]forwardRow, len(batch))
		for i, k := range batch {
			again[i] = rows[k]
		}
		res, err := n.runBatch(ctx, s, again, nil)
		if err != nil {
			return err
		}
		for i, k := range batch {
			out[k] = res[i]
		}
	}
	return nil
}

func (n *network) clock() time.Time {
	if n.now != nil {
		return n.now()
	}
	return time.Now()
}

// batchEnd is the end of the batch that starts at row start of the rows
// before end, whose token counts tokens gives, and the batch's tokens:
// batchSize rows at most, and where the backend bounds them, no more rows
// than fit in batchTokens tokens, but always the first, whatever its length.
func (n *network) batchEnd(start, end int, tokens func(i int) int) (int, int) {
	i, sum := start, 0
	for ; i < end && i-start < n.batchSize; i++ {
		t := tokens(i)
		if n.batchTokens > 0 && sum+t > n.batchTokens && i > start {
			break
		}
		sum += t
	}
	return i, sum
}

func (n *network) checkRow(r forwardRow) error {
	if len(r.IDs) == 0 || len(r.IDs) > n.maxLen {
		return fmt.Errorf("%w: %d tokens, want 1 to %d (max_position_embeddings)", errBadRow, len(r.IDs), n.maxLen)
	}
	for i, id := range r.IDs {
		if id < 0 || id >= n.vocab {
			return fmt.Errorf("%w: token %d at position %d outside the vocabulary [0, %d)", errBadRow, id, i, n.vocab)
		}
	}
	if len(r.Markers) == 0 {
		return fmt.Errorf("%w: no option markers", errBadRow)
	}
	for k, p := range r.Markers {
		if p < 0 || p >= len(r.IDs) {
			return fmt.Errorf("%w: marker %d at position %d outside the row of %d tokens", errBadRow, k, p, len(r.IDs))
		}
	}
	if r.QType < 0 || r.QType >= heads.NumQuestionTypes {
		return fmt.Errorf("%w: qtype %d, want 0 choice, 1 score or 2 noul", errBadRow, r.QType)
	}
	return nil
}

// runBatch runs one batch on s, which it closes, and reads back its
// outputs: packed (no padding) on a stream that takes it, else right-padded
// (the layout of upstream's collate_items). An observer always sees the padded layout, the one
// upstream's intermediate states have.
func (n *network) runBatch(ctx context.Context, s backend.Stream, rows []forwardRow, obs backend.Observer) ([]rowOutput, error) {
	defer s.Close()
	var batch forwardpass.Batch
	var pass forwardpass.Outputs
	var err error
	if obs == nil {
		batch = forwardpass.Layout(s, rows, n.padID)
		pass, err = n.parts.RunPruned(ctx, s, batch)
	} else {
		batch = forwardpass.Pad(rows, n.padID)
		pass, err = n.parts.RunObserved(ctx, s, batch, obs)
	}
	if err != nil {
		return nil, err
	}
	counts := batch.Counts
	logitsHost := make([]float32, len(batch.MarkerRows))
	actProbsHost := make([]float32, len(rows)*n.nAct)
	type read struct {
		t   backend.Tensor
		dst []float32
	}
	reads := []read{{pass.Logits, logitsHost}, {pass.ActProbs, actProbsHost}}
	var actLogitsHost []float32
	if n.actLogits {
		actLogitsHost = make([]float32, len(rows)*n.nAct)
		reads = append(reads, read{pass.ActLogits, actLogitsHost})
	}
	for _, read := range reads {
		if err := s.Read(ctx, read.t, read.dst); err != nil {
			return nil, fmt.Errorf("laya: forward: %w", err)
		}
	}
	out := make([]rowOutput, len(rows))
	for b := range rows {
		lo, hi := b*n.nAct, (b+1)*n.nAct
		out[b] = rowOutput{
			Logits:   logitsHost[:counts[b]:counts[b]],
			ActProbs: actProbsHost[lo:hi:hi],
		}
		if actLogitsHost != nil {
			out[b].ActLogits = actLogitsHost[lo:hi:hi]
		}
		logitsHost = logitsHost[counts[b]:]
	}
	return out, nil
}

// embed mean-pools the encoder's last hidden state (after final_norm, before
// the decision head) over each row's real tokens: the embedding laya-mlx's
// embed_fn_from_agent gives the shortlist. Rows run in batches of batchSize
// (packed where the backend takes it, filled up to its token bucket, else
// padded); padded and fill positions never enter the mean.
func (n *network) embed(ctx context.Context, rows [][]int, batchSize int) ([][]float32, error) {
	out := make([][]float32, 0, len(rows))
	for start := 0; start < len(rows); start += batchSize {
		texts := rows[start:min(start+batchSize, len(rows))]
		for i, r := range texts {
			if len(r) == 0 || len(r) > n.maxLen {
				return nil, fmt.Errorf("%w: text %d has %d tokens, want 1 to %d", errBadRow, start+i, len(r), n.maxLen)
			}
		}
		vecs, err := n.embedBatch(ctx, n.be.NewStream(), texts)
		if err != nil {
			return nil, err
		}
		// As widen does for answers: a text whose vector overflowed the
		// backend's precision runs again in a wider one, where there is
		// one, rather than reach the cosine scores as NaN.
		var again []int
		for i, v := range vecs {
			if !backend.Finite(v) {
				again = append(again, i)
			}
		}
		if w, ok := n.be.(backend.Widener); ok && len(again) > 0 {
			if s := w.WideStream(); s != nil {
				redo := make([][]int, len(again))
				for j, i := range again {
					redo[j] = texts[i]
				}
				wide, err := n.embedBatch(ctx, s, redo)
				if err != nil {
					return nil, err
				}
				for j, i := range again {
					vecs[i] = wide[j]
				}
			}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// embedBatch is embed's mean-pooled vectors of texts, run on s, which it
// closes.
func (n *network) embedBatch(ctx context.Context, s backend.Stream, texts [][]int) ([][]float32, error) {
	dim := n.parts.Encoder.Config().HiddenSize
	batchRows := make([]forwardRow, len(texts))
	for i, r := range texts {
		batchRows[i] = forwardRow{IDs: r}
	}
	batch := forwardpass.Layout(s, batchRows, n.padID)
	// Filled up to the stream's token bucket, as a prediction's batch
	// is: texts of many lengths then share a GPU backend's few graphs.
	// The fill row is last, so every text's rows stay where batch has
	// them.
	ids, layout, _ := batch.Bucketed(backend.TokenBucket(s))
	hidden, err := n.parts.Encoder.Forward(ctx, s, ids, layout, nil)
	if err != nil {
		s.Close()
		return nil, err
	}
	host := make([]float32, len(ids)*dim)
	err = s.Read(ctx, hidden, host)
	s.Close()
	if err != nil {
		return nil, fmt.Errorf("laya: embed: %w", err)
	}
	out := make([][]float32, 0, len(texts))
	for b, first := range batch.Starts() {
		// Sum in float64: the mean of up to max_len vectors should not
		// depend on summation order more than float32 rounding allows.
		n := batch.Lengths[b]
		sum := make([]float64, dim)
		for p := first; p < first+n; p++ {
			for j, v := range host[p*dim : (p+1)*dim] {
				sum[j] += float64(v)
			}
		}
		vec := make([]float32, dim)
		for j := range vec {
			vec[j] = float32(sum[j] / float64(n))
		}
		out = append(out, vec)
	}
	return out, nil
}
