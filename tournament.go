package laya

import (
	"context"

	"github.com/laya-metal/laya/heads"
	"github.com/laya-metal/laya/pyjson"
)

// Many options. Every option of a choice shares one head_max_len budget, so a
// choice of 40 labels leaves each label a few tokens, or no room at all.
// PredictTournament splits such a choice into groups the model reads whole,
// answers every group in one pass, and lets the group winners meet in a final
// call (upstream #950).

// TournamentGroupSize is the most labels one call of a tournament reads.
const TournamentGroupSize = 16

// MaxTournamentLabels bounds one tournament question: three rounds of 16.
const MaxTournamentLabels = TournamentGroupSize * TournamentGroupSize * TournamentGroupSize

// TournamentUsage reports a choice answered in rounds (the JSON usage
// "tournament" entry of that question).
type TournamentUsage struct {
	QuestionID string
	// Labels is the number of labels; Groups the calls of the first round;
	// Rounds the rounds, the final included; Rows the forward rows of them all.
	Labels, Groups, Rounds, Rows int
}

// bracket is one tournament question in play.
type bracket struct {
	q      *question
	index  int   // position in the request
	alive  []int // label indices still in play
	rounds [][]group
	rows   int
}

// group is one call of a round: the labels it read, their calibrated
// probabilities, the winner, and the act probability of its row.
type group struct {
	labels []int
	p      []float32
	winner int // label index
	act    float32
	row    row
}

// splitGroups splits n labels into the fewest groups of at most
// TournamentGroupSize, as even as possible, so that no group is a lone label.
func splitGroups(labels []int) [][]int {
	g := (len(labels) + TournamentGroupSize - 1) / TournamentGroupSize
	out := make([][]int, 0, g)
	start := 0
	for i := range g {
		size := len(labels) / g
		if i < len(labels)%g {
			size++
		}
		out = append(out, labels[start:start+size])
		start += size
	}
	return out
}

// subQuestion is q restricted to the labels at idx, in their order.
func (q *question) subQuestion(idx []int) *question {
	sub := &question{id: q.id, qtype: q.qtype, instructions: q.instructions,
		options: make([]string, len(idx)), labels: make([]Value, len(idx))}
	for i, j := range idx {
		sub.options[i], sub.labels[i] = q.options[j], q.labels[j]
	}
	return sub
}

// PredictTournament answers every question about a state as PredictRequest
// does, except that a choice with more than TournamentGroupSize labels is
// played as a tournament: its labels are split into the fewest groups of at
// most 16, as even as possible; every group is a call of its own, all of them
// in one pass (with the request's other questions); the group winners meet
// in the next round, until one call holds them all. A request with no such
// choice is answered exactly as PredictRequest answers it.
//
// A tournament's answer is the final call's winner. Its probabilities cover
// every label, in criteria order: a label's probability in its group times its
// group winner's probability in the rounds after, so they sum to one and the
// winners' shares are what the final call gave them. confidence (1 − the
// normalized entropy) and answer_confidence (the chosen label's probability)
// are read from that distribution; the action is the final call's.
// usage.tournament reports the labels, groups, rounds and rows of each.
func (a *Agent) PredictTournament(ctx context.Context, req Request) (*Result, error) {
	call, err := a.startCall(ctx, req)
	if err != nil {
		return nil, err
	}
	if call == nil {
		return &Result{}, nil // no questions: no model
	}
	defer call.done()
	net, qs, b := call.net, call.qs, call.b
	enc := b.encodeStateBounded(req.State, b.maxLen)
	var plain []*question
	var plainAt []int
	var brackets []*bracket
	for i, q := range qs {
		if q.qtype != heads.Choice || len(q.options) <= TournamentGroupSize {
			plain, plainAt = append(plain, q), append(plainAt, i)
			continue
		}
		if len(q.options) > MaxTournamentLabels {
			return nil, questionErrorf(q.id, "%d labels; a tournament plays at most %d", len(q.options), MaxTournamentLabels)
		}
		bk := &bracket{q: q, index: i, alive: make([]int, len(q.options))}
		for j := range bk.alive {
			bk.alive[j] = j
		}
		brackets = append(brackets, bk)
	}
	temps := a.temperatures(req.Lang)
	res := &Result{answers: make([]answer, len(qs))}
	// Round one carries the plain questions, so a request without a tournament
	// is exactly Predict's single pass.
	plainRows := make([]row, len(plain))
	for i, q := range plain {
		plainRows[i] = b.build(q, enc.IDs, enc.Left)
		if err := checkMarkers(q, plainRows[i], b.headMaxLen); err != nil {
			return nil, err
		}
	}
	first := true
	for first || len(brackets) > 0 {
		var fwd []forwardRow
		if first {
			for _, r := range plainRows {
				fwd = append(fwd, r.forwardRow())
			}
		}
		var round [][]group
		for _, bk := range brackets {
			var gs []group
			for _, idx := range splitGroups(bk.alive) {
				r := b.build(bk.q.subQuestion(idx), enc.IDs, enc.Left)
				if err := checkMarkers(bk.q, r, b.headMaxLen); err != nil {
					return nil, err
				}
				gs = append(gs, group{labels: idx, row: r})
				fwd = append(fwd, r.forwardRow())
			}
			round = append(round, gs)
		}
		outs, err := net.forward(ctx, fwd)
		if err != nil {
			return nil, err
		}
		k := 0
		if first {
			part, err := assembleResult(plain, plainRows, outs[:len(plain)], temps)
			if err != nil {
				return nil, err
			}
			for i, ans := range part.answers {
				res.answers[plainAt[i]] = ans
			}
			res.Usage.InputTokens += part.Usage.InputTokens
			res.Usage.Options = append(res.Usage.Options, part.Usage.Options...)
			k = len(plain)
			first = false
		}
		var next []*bracket
		for bi, bk := range brackets {
			gs := round[bi]
			for gi := range gs {
				g := &gs[gi]
				p, err := calibrated(bk.q, len(g.labels), outs[k].Logits, outs[k].ActProbs, temps)
				if err != nil {
					return nil, err
				}
				g.p, g.winner, g.act = p, g.labels[heads.Argmax(p)], outs[k].ActProbs[0]
				res.Usage.InputTokens += len(g.row.IDs)
				bk.rows++
				k++
			}
			bk.rounds = append(bk.rounds, gs)
			if len(gs) == 1 {
				res.answers[bk.index] = bk.answer()
				res.Usage.Tournament = append(res.Usage.Tournament, TournamentUsage{QuestionID: bk.q.id,
					Labels: len(bk.q.options), Groups: len(bk.rounds[0]), Rounds: len(bk.rounds), Rows: bk.rows})
				continue
			}
			// A new slice: the groups of this round hold slices of the old one.
			bk.alive = make([]int, 0, len(gs))
			for _, g := range gs {
				bk.alive = append(bk.alive, g.winner)
			}
			next = append(next, bk)
		}
		brackets = next
	}
	return res, nil
}

// answer composes the tournament's answer from its rounds.
func (bk *bracket) answer() answer {
	n := len(bk.q.options)
	// share[l]: the probability of label l from its round on; the final round's
	// are its own, an earlier round's are scaled by its group winner's share.
	share := make([]float64, n)
	last := len(bk.rounds) - 1
	for r := last; r >= 0; r-- {
		for _, g := range bk.rounds[r] {
			scale := 1.0
			if r < last {
				scale = share[g.winner]
			}
			for j, l := range g.labels {
				share[l] = float64(g.p[j]) * scale
			}
		}
	}
	final := bk.rounds[last][0]
	p32 := make([]float32, n)
	c := &ChoiceAnswer{Probabilities: make([]LabelProbability, n), ActProbability: heads.Round4(float64(final.act))}
	for i, label := range bk.q.labels {
		p32[i] = float32(share[i])
		c.Probabilities[i] = LabelProbability{Label: pyjson.KeyText(label), Value: label, Probability: heads.Round4(share[i])}
	}
	c.Confidence = heads.Round4(float64(heads.EntropyConfidence(p32)))
	c.AnswerConfidence = heads.Round4(min(max(share[final.winner], 0), 1))
	c.Choice, c.ChoiceValue = c.Probabilities[final.winner].Label, bk.q.labels[final.winner]
	return answer{id: bk.q.id, choice: c}
}

// tournamentValue is usage["tournament"]: {question id: {"labels", "groups",
// "rounds", "rows"}}.
func tournamentValue(ts []TournamentUsage) Value {
	m := make([]pyjson.Member, len(ts))
	for i, t := range ts {
		m[i] = pyjson.Member{Key: t.QuestionID, Value: pyjson.Object(
			pyjson.Member{Key: "labels", Value: pyjson.Int(int64(t.Labels))},
			pyjson.Member{Key: "groups", Value: pyjson.Int(int64(t.Groups))},
			pyjson.Member{Key: "rounds", Value: pyjson.Int(int64(t.Rounds))},
			pyjson.Member{Key: "rows", Value: pyjson.Int(int64(t.Rows))},
		)}
	}
	return rawObject(m)
}
