package cuda_test

import (
	"fmt"

	"github.com/laya-metal/laya/backend/cuda"
)

// LAYA_CUDA's syntax, as the registered backend reads it.
func ExampleParseOptions() {
	opts, err := cuda.ParseOptions("precision=fp32, graphs=off")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(opts.Precision, opts.NoGraphs)
	_, err = cuda.ParseOptions("precision=fp8")
	fmt.Println(err)
	// Output:
	// fp32 true
	// cuda: option "precision=fp8": precision "fp8", want fp32, fp16, bf16 or fp16x2
}
