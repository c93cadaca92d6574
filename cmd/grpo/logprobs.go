package main

import (
	"encoding/json"
	"flag"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/loader"
)

func init() {
	var modelArg, idsArg, device, adapterDir, promptText, completionText string
	var start int
	register(&command{
		name:    "logprobs",
		summary: "print the log-probability of each token given the ones before it",
		usage:   "--model DIR [--adapter DIR] (--ids 1,2,3,... --start K | --prompt TEXT --completion TEXT)",
		help: `For every t >= K, prints log p(ids[t] | ids[:t]) under the model, as
{"logprobs":[...]} with len(ids)-K entries. K must be at least 1. With
--adapter, the PEFT LoRA adapter in DIR is applied to the model.

With --prompt and --completion instead of --ids, both texts are tokenized with
the model's tokenizer (each on its own, the completion appended after the
prompt as a sampler would have produced it) and the completion's tokens are
scored; the output then also has "ids" and "start".

Examples:
  grpo logprobs --model testdata/models/qwen3-tiny --ids 1,5,9,200 --start 1
  grpo logprobs --model examples/demo/model --prompt "reverse cat" --completion "tac"`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&modelArg, "model", "", "model directory or hub id (required)")
			fs.StringVar(&idsArg, "ids", "", "comma-separated token ids (required)")
			fs.IntVar(&start, "start", 1, "first position to score (>= 1)")
			fs.StringVar(&adapterDir, "adapter", "", "PEFT LoRA adapter directory to apply (optional)")
			fs.StringVar(&promptText, "prompt", "", "context text (with --completion, instead of --ids)")
			fs.StringVar(&completionText, "completion", "", "text to score after --prompt")
			deviceFlag(fs, &device)
		},
		run: func(args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			text := promptText != "" || completionText != ""
			if text && idsArg != "" {
				return usagef("give either --ids or --prompt with --completion, not both")
			}
			var ids []int32
			var err error
			if !text {
				if ids, err = parseIDs(idsArg); err != nil {
					return err
				}
				if start < 1 || start >= len(ids) {
					return usagef("--start %d must be between 1 and %d (the number of ids minus one)", start, len(ids)-1)
				}
			} else if promptText == "" || completionText == "" {
				return usagef("--prompt and --completion go together; both must be non-empty")
			}
			l, err := openModel(loader.Spec{Model: modelArg, Device: device, Adapter: adapterDir, TokenizerOptional: !text})
			if err != nil {
				return err
			}
			if text {
				p := l.Tokenizer.Encode(promptText)
				ids, start = append(p, l.Tokenizer.Encode(completionText)...), len(p)
			}
			for i, id := range ids {
				if int(id) >= l.Base.Config.VocabSize {
					return usagef("--ids: id %d (position %d) is outside the model's vocabulary of %d tokens", id, i, l.Base.Config.VocabSize)
				}
			}
			lp, err := l.Model.TokenLogprobs(ids, start)
			if err != nil {
				return err
			}
			if text {
				return json.NewEncoder(stdout).Encode(map[string]any{"logprobs": lp, "ids": ids, "start": start})
			}
			return json.NewEncoder(stdout).Encode(map[string][]float32{"logprobs": lp})
		},
	})
}

// parseIDs parses "1,2,3" into token ids.
func parseIDs(s string) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, usagef("--ids is required: comma-separated token ids such as --ids 1,2,3")
	}
	parts := strings.Split(s, ",")
	ids := make([]int32, len(parts))
	for i, p := range parts {
		v, err := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		if err != nil || v < 0 {
			return nil, usagef("--ids: %q (item %d) is not a non-negative integer token id", p, i+1)
		}
		ids[i] = int32(v)
	}
	if len(ids) < 2 {
		return nil, usagef("--ids needs at least two ids: a context and one token to score")
	}
	return ids, nil
}
