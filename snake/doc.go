// Package snake puts a Laya decision model inside a real-time game loop: Snake, one
// model decision per tick, under a deadline, with a deterministic safety shield. It is
// the Go equivalent of laya-mlx's laya-snake (tncki/laya-mlx, mizorewww/laya-mlx
// laya_mlx/snake/), and what `laya snake` runs.
//
// # The game
//
// NewGame makes a W×H board (default 24×16, see DefaultGame) with a seeded food
// sequence and a snake of InitialLength cells. The rules: a wall, the body or the neck
// kills; the tail's cell is free on a move that does not eat; eating grows the snake
// and puts the food on a uniformly chosen empty cell; filling the board wins.
//
// # The planner and the shield
//
// Game.Plan classifies the four moves (UP, DOWN, LEFT, RIGHT, always in that order):
//
//   - Legal: no collision.
//   - Traps: legal, but afterwards the head cannot reach its tail through open cells
//     (a flood fill over the board after the move).
//   - Safe: legal, not trapping, and keeping the shield's invariant: the body lies in
//     order along a Hamiltonian cycle of the board (HamiltonianCycle; it exists when
//     the board is at least 4×4 with one even side), and the head never overtakes the
//     tail nor skips the food along the cycle. A snake that only makes safe moves can
//     always follow the cycle, so it never dies and eats at least once per lap.
//
// The preferred move is the safe move that jumps furthest along the cycle. Each move
// gets one of upstream's compact verdicts as its option text: "Blocked. Collision.",
// "Unsafe. Traps the snake.", "Safe. Eat food now. Best.", "Safe. Best route to food.",
// "Safe. Slower route.".
//
// # One tick
//
// Loop.Tick plans, then asks the Model once, with the compact state text ("Safe route:
// yes. Food reachable through empty cells: yes.") and three questions (Prompt):
//
//   - move: choice over UP/DOWN/LEFT/RIGHT with the planner's verdicts as criteria;
//   - risk: noul "Is a safe route available?";
//   - food: noul "Is food reachable through empty cells?".
//
// AgentModel answers them with one laya Agent.Predict. The most probable move is
// executed when it is safe; otherwise the most probable safe move is (an
// intervention). With Config.Unassisted the argmax is always executed.
//
// # Real time
//
// With Config.FPS > 0 each tick has 1/FPS seconds. The model runs on the loop's worker
// goroutines under a context whose deadline is the tick's; when the deadline passes
// first, the loop cancels that context, plays the shield's move and goes on (a
// deadline miss). A request still running when the next tick starts is stale: it is
// cancelled, and its answer, if it ever comes, is discarded. At most three requests
// are ever open; a model that ignores cancellation only costs misses. FPS 0 runs as
// fast as the model answers, with no deadline. Loop.Run paces ticks on a fixed
// schedule.
//
// A tick allocates nothing outside the model: the prompts are built once (4 states,
// 5^4 move questions), the tick contexts are re-armed rather than made, the planner's
// flood fill and the record line use buffers allocated with the game. A test holds
// this with testing.AllocsPerRun.
//
// # Output
//
// Config.Record receives one JSON line per tick (Tick.AppendJSON: tick, probabilities,
// chosen, executed, latency_ms, the planner's verdicts, P(safe route), P(food), …).
// Loop.Summary is the run's outcome (steps, alive, score, moves/s, tick-time
// percentiles, deadline misses, interventions, model calls). Benchmark plays several
// seeds uncapped and at several rates and reports the highest rate at which every seed
// survived with at least 99 % of ticks on time.
//
// Package snake/tui draws the game in a terminal.
package snake
