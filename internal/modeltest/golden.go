package modeltest

import "github.com/grpo-dev/grpo/internal/golden"

// The golden files are read through internal/golden.
type (
	logitCase  = golden.LogitCase
	array      = golden.Array
	lossFile   = golden.LossFile
	loraArrays = golden.LoRAArrays
)

var readGolden = golden.Read
