package snake

import "strconv"

// AppendJSON appends the tick as one JSON object (a --record line):
//
//	{"tick":12,"round":1,"probabilities":{"UP":0.25,"DOWN":0.25,"LEFT":0.25,"RIGHT":0.25},
//	 "chosen":"UP","executed":"LEFT","intervened":true,"deadline_miss":false,
//	 "safe":["LEFT"],"planner":"LEFT","criteria":{"UP":"Unsafe. Traps the snake.",…},
//	 "p_safe_route":0.51,"p_food":0.49,"state":"Safe route: yes. …",
//	 "latency_ms":1.234,"model_ms":1.1,"input_tokens":97,
//	 "head":[12,9],"food":[3,4],"score":0,"length":6,"ate":false,"alive":true}
//
// probabilities, chosen, p_safe_route, p_food and model_ms are null on a deadline miss
// (no answer arrived). latency_ms is the whole tick (plan, decide, step), without
// pacing. It allocates nothing when dst has room.
func (t *Tick) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"tick":`...)
	dst = strconv.AppendInt(dst, int64(t.N), 10)
	dst = append(dst, `,"round":`...)
	dst = strconv.AppendInt(dst, int64(t.Round), 10)
	dst = append(dst, `,"probabilities":`...)
	if t.Answered {
		dst = append(dst, '{')
		for i, d := range Directions {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, d.String()...)
			dst = append(dst, `":`...)
			dst = appendFloat(dst, t.Answers.Move[d])
		}
		dst = append(dst, '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"chosen":`...)
	dst = appendDirection(dst, t.Proposed)
	dst = append(dst, `,"executed":`...)
	dst = appendDirection(dst, t.Executed)
	dst = append(dst, `,"intervened":`...)
	dst = strconv.AppendBool(dst, t.Intervened)
	dst = append(dst, `,"deadline_miss":`...)
	dst = strconv.AppendBool(dst, t.DeadlineMiss)
	dst = append(dst, `,"safe":[`...)
	first := true
	for _, m := range t.Plan.Moves {
		if m.Safe {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendDirection(dst, m.Direction)
		}
	}
	dst = append(dst, `],"planner":`...)
	dst = appendDirection(dst, t.Plan.Preferred)
	dst = append(dst, `,"criteria":{`...)
	for i, d := range Directions {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendDirection(dst, d)
		dst = append(dst, ':', '"')
		dst = append(dst, t.Plan.Criteria[d].String()...) // fixed texts: nothing to escape
		dst = append(dst, '"')
	}
	dst = append(dst, `},"p_safe_route":`...)
	dst = appendOptFloat(dst, t.Answered, t.Answers.SafeRoute)
	dst = append(dst, `,"p_food":`...)
	dst = appendOptFloat(dst, t.Answered, t.Answers.FoodReachable)
	dst = append(dst, `,"state":"Safe route: `...)
	dst = append(dst, yesNo(t.Plan.SafeCount > 0)...)
	dst = append(dst, `. Food reachable through empty cells: `...)
	dst = append(dst, yesNo(t.Plan.FoodReachable)...)
	dst = append(dst, `.","latency_ms":`...)
	dst = strconv.AppendFloat(dst, ms(t.TickTime), 'f', 3, 64)
	dst = append(dst, `,"model_ms":`...)
	if t.Answered {
		dst = strconv.AppendFloat(dst, ms(t.ModelTime), 'f', 3, 64)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(t.Answers.InputTokens), 10)
	dst = append(dst, `,"head":`...)
	dst = appendPoint(dst, t.Head)
	dst = append(dst, `,"food":`...)
	dst = appendPoint(dst, t.Food)
	dst = append(dst, `,"score":`...)
	dst = strconv.AppendInt(dst, int64(t.Score), 10)
	dst = append(dst, `,"length":`...)
	dst = strconv.AppendInt(dst, int64(t.Length), 10)
	dst = append(dst, `,"ate":`...)
	dst = strconv.AppendBool(dst, t.Ate)
	dst = append(dst, `,"alive":`...)
	dst = strconv.AppendBool(dst, t.Alive)
	return append(dst, '}')
}

func appendFloat(dst []byte, v float64) []byte { return strconv.AppendFloat(dst, v, 'g', -1, 64) }

func appendOptFloat(dst []byte, ok bool, v float64) []byte {
	if !ok {
		return append(dst, "null"...)
	}
	return appendFloat(dst, v)
}

func appendDirection(dst []byte, d Direction) []byte {
	if d >= 4 {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = append(dst, d.String()...)
	return append(dst, '"')
}

func appendPoint(dst []byte, p Point) []byte {
	dst = append(dst, '[')
	dst = strconv.AppendInt(dst, int64(p.X), 10)
	dst = append(dst, ',')
	dst = strconv.AppendInt(dst, int64(p.Y), 10)
	return append(dst, ']')
}
