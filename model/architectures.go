package model

import (
	"fmt"
	"strings"
)

// checkArchitectures refuses a config.json whose architectures name only
// heads other than a language model's (…ForSequenceClassification: a
// reward model; …ForTokenClassification; a bare …Model): its model_type
// may be one grpo runs, yet the checkpoint has no LM head to sample or
// train, or one that means something else. An absent list is accepted,
// as transformers does.
func checkArchitectures(archs []string) error {
	if len(archs) == 0 {
		return nil
	}
	for _, a := range archs {
		if strings.HasSuffix(a, "ForCausalLM") || strings.HasSuffix(a, "ForConditionalGeneration") {
			return nil
		}
	}
	return fmt.Errorf(`architectures = ["%s"]: grpo runs language models (…ForCausalLM or …ForConditionalGeneration); this checkpoint has another head, so use the model's causal-LM checkpoint`, strings.Join(archs, `", "`))
}
