package snake_test

import (
	"context"
	"fmt"

	"github.com/laya-metal/laya"
	"github.com/laya-metal/laya/snake"
)

// The shield's route on a 4×4 board: each cell's position along the cycle.
func ExampleHamiltonianCycle() {
	tour, _ := snake.HamiltonianCycle(4, 4)
	var order [4][4]int
	for i, p := range tour {
		order[p.Y][p.X] = i
	}
	for _, row := range order {
		fmt.Printf("%2d %2d %2d %2d\n", row[0], row[1], row[2], row[3])
	}
	// Output:
	//  0  1  2  3
	// 15  6  5  4
	// 14  7  8  9
	// 13 12 11 10
}

// The planner's verdict on each move at the start of the default game, as the model
// reads it. The head is at the centre (12,8) on a row the cycle sweeps rightwards, the
// body behind it to the left: LEFT is the neck; RIGHT follows the cycle; DOWN jumps
// 23 cells ahead along it (the row below runs back leftwards) without passing the
// food; UP would jump 361 cells ahead, past the food (upstream's compact wording calls
// every unsafe move a trap).
func ExampleGame_Plan() {
	g, _ := snake.NewGame(snake.DefaultGame)
	var p snake.Plan
	g.Plan(&p)
	for _, d := range snake.Directions {
		fmt.Printf("%-5s %s\n", d, p.Criteria[d])
	}
	state, _ := snake.Prompt(&p)
	fmt.Println(state.Serialize())
	// Output:
	// UP    Unsafe. Traps the snake.
	// DOWN  Safe. Best route to food.
	// LEFT  Blocked. Collision.
	// RIGHT Safe. Slower route.
	// Safe route: yes. Food reachable through empty cells: yes.
}

// A loop with a decision maker of your own: here one that always wants UP. The
// shield replaces it whenever UP is unsafe.
func ExampleLoop() {
	up := snake.ModelFunc(func(ctx context.Context, _ laya.State, _ laya.Questions) (snake.Answers, error) {
		return snake.Answers{Move: [4]float64{0.7, 0.1, 0.1, 0.1}, SafeRoute: 0.9, FoodReachable: 0.9}, nil
	})
	l, _ := snake.New(up, snake.Config{GameConfig: snake.DefaultGame, FPS: 0})
	defer l.Close()
	_ = l.Run(context.Background(), 200)
	s := l.Summary()
	fmt.Println(s.Steps, s.Alive, s.ModelCalls, s.Interventions > 0)
	// Output: 200 true 200 true
}
