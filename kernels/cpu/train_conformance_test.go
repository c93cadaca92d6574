package cpu_test

import (
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
	"github.com/grpo-dev/grpo/kernels/kerneltest"
)

func TestTrainConformance(t *testing.T) { kerneltest.RunTrain(t, cpu.New()) }
