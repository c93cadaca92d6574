package update

import (
	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/optim"
)

// OptimizerParams are an adapter's parameters as the optimizer takes
// them, in the adapter's order: the optimizer names its checkpointed
// moments after them and pairs them up by that order on resume.
func OptimizerParams(ad *lora.Adapter) []optim.Param {
	var params []optim.Param
	for _, p := range ad.Params() {
		params = append(params, optim.Param{Name: p.Name, Value: p.Value, Grad: p.Grad})
	}
	return params
}
