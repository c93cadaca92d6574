package main

import (
	"encoding/json"
	"flag"
	"os"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

func init() {
	var modelArg, idsArg, device, adapterDir string
	var start int
	register(&command{
		name:    "logprobs",
		summary: "print the log-probability of each token given the ones before it",
		usage:   "--model DIR [--adapter DIR] --ids 1,2,3,... --start K",
		help: `For every t >= K, prints log p(ids[t] | ids[:t]) under the model, as
{"logprobs":[...]} with len(ids)-K entries. K must be at least 1. With
--adapter, the PEFT LoRA adapter in DIR is applied to the model.

Example:
  grpo logprobs --model testdata/models/qwen3-tiny --ids 1,5,9,200 --start 1`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&modelArg, "model", "", "model directory or hub id (required)")
			fs.StringVar(&idsArg, "ids", "", "comma-separated token ids (required)")
			fs.IntVar(&start, "start", 1, "first position to score (>= 1)")
			fs.StringVar(&adapterDir, "adapter", "", "PEFT LoRA adapter directory to apply (optional)")
			deviceFlag(fs, &device)
		},
		run: func(args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			ids, err := parseIDs(idsArg)
			if err != nil {
				return err
			}
			if start < 1 || start >= len(ids) {
				return usagef("--start %d must be between 1 and %d (the number of ids minus one)", start, len(ids)-1)
			}
			dir, err := resolveModelDir(modelArg)
			if err != nil {
				return err
			}
			be, err := openBackend(device)
			if err != nil {
				return err
			}
			m, err := model.Load(dir, be)
			if err != nil {
				return err
			}
			for i, id := range ids {
				if int(id) >= m.Config.VocabSize {
					return usagef("--ids: id %d (position %d) is outside the model's vocabulary of %d tokens", id, i, m.Config.VocabSize)
				}
			}
			if adapterDir != "" {
				ad, err := lora.Load(adapterDir, m)
				if err != nil {
					return err
				}
				m = m.WithAdapter(ad)
			}
			lp, err := m.TokenLogprobs(ids, start)
			if err != nil {
				return err
			}
			return json.NewEncoder(os.Stdout).Encode(map[string][]float32{"logprobs": lp})
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
