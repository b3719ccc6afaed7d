package snake

import "fmt"

// HamiltonianCycle returns a closed tour of a width×height board that visits every cell
// once with unit steps, the last cell adjacent to the first. It is the shield's route:
// a snake whose body lies in cycle order and whose head never overtakes its tail along
// the cycle can always follow the cycle, so it can never die.
//
// The construction is upstream's (laya-mlx laya_mlx/snake/game.py hamiltonian_cycle):
// with an even height, start at (0,0), sweep every row boustrophedon over columns
// 1..width-1, then return up column 0; an odd height is the transposed tour of the
// transposed board. A board with both sides odd has no Hamiltonian cycle (colouring
// argument: a closed tour alternates colours, so it needs an even cell count).
func HamiltonianCycle(width, height int) ([]Point, error) {
	if err := checkBoard(width, height); err != nil {
		return nil, err
	}
	if height%2 == 1 {
		t, err := HamiltonianCycle(height, width)
		if err != nil {
			return nil, err
		}
		for i, p := range t {
			t[i] = Point{X: p.Y, Y: p.X}
		}
		return t, nil
	}
	path := make([]Point, 0, width*height)
	path = append(path, Point{0, 0})
	for y := 0; y < height; y++ {
		if y%2 == 0 {
			for x := 1; x < width; x++ {
				path = append(path, Point{x, y})
			}
		} else {
			for x := width - 1; x >= 1; x-- {
				path = append(path, Point{x, y})
			}
		}
	}
	for y := height - 1; y >= 1; y-- {
		path = append(path, Point{0, y})
	}
	return path, nil
}

// maxCells bounds the board so a hostile --width/--height cannot ask for gigabytes.
const maxCells = 1 << 16

// checkBoard rejects boards the shield cannot cover.
func checkBoard(width, height int) error {
	switch {
	case width < 4 || height < 4:
		return fmt.Errorf("%w: %d×%d is smaller than 4×4", ErrBoard, width, height)
	case width%2 == 1 && height%2 == 1:
		return fmt.Errorf("%w: %d×%d has two odd sides, so no Hamiltonian cycle exists (make one side even)", ErrBoard, width, height)
	case width > maxCells/height:
		return fmt.Errorf("%w: %d×%d has more than %d cells", ErrBoard, width, height, maxCells)
	}
	return nil
}
