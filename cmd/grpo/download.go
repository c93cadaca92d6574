package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/grpo-dev/grpo/model/hub"
)

func init() {
	var revision, repoType, include string
	register(&command{
		name:    "download",
		summary: "fetch a model or dataset from the Hugging Face Hub into the local cache",
		usage:   "MODEL_ID [--revision R] [--repo-type model|dataset] [--include PATTERN,...]",
		help: `Downloads the files grpo needs from a hub repository into the Hugging Face
cache, in the same layout huggingface_hub uses, so Python tools (transformers,
vLLM, datasets) and grpo share one copy. Prints the local snapshot directory.

Unlike the automatic download when a config names a hub model, this always
asks the hub which commit the revision points at now, so it also updates a
cached branch. Files already in the cache are not fetched again; an
interrupted download resumes where it stopped.

For models the default files are config.json, generation_config.json,
tokenizer.json, tokenizer_config.json, special_tokens_map.json, vocab.json,
merges.txt, model.safetensors.index.json and *.safetensors. For datasets the
default is every file. --include replaces the default with shell patterns
('*' also matches '/'; a trailing '/' selects a folder).

Examples:
  grpo download Qwen/Qwen3-0.6B
  grpo download meta-llama/Llama-3.2-1B-Instruct      # gated: needs HF_TOKEN
  grpo download Qwen/Qwen2.5-0.5B-Instruct --revision COMMIT_SHA   # pin one commit
  grpo download openai/gsm8k --repo-type dataset --include 'main/*'
  HF_HUB_OFFLINE=1 grpo train configs/rl/gsm8k.toml   # later, without network

Environment:
  HF_TOKEN           access token for gated or private repos (else the file
                     HF_TOKEN_PATH, default $HF_HOME/token, as 'hf auth login' writes)
  HF_ENDPOINT        hub URL (default https://huggingface.co), e.g. a mirror
  HF_HUB_CACHE       cache directory (default $HF_HOME/hub)
  HF_HOME            base of the cache and token (default ~/.cache/huggingface)
  HF_HUB_OFFLINE=1   no network: only report what the cache already holds`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&revision, "revision", "main", "branch, tag or commit hash to download")
			fs.StringVar(&repoType, "repo-type", "model", "repository type: model or dataset")
			fs.StringVar(&include, "include", "", "comma-separated file patterns to fetch instead of the defaults (e.g. '*.json,*.safetensors')")
		},
		run: func(args []string) error {
			if len(args) != 1 {
				return usagef("download takes exactly one MODEL_ID, like Qwen/Qwen3-0.6B")
			}
			opts := hub.Options{Revision: revision, Progress: newDownloadProgress(os.Stderr)}
			switch repoType {
			case "model":
				opts.RepoType = hub.Model
			case "dataset":
				opts.RepoType = hub.Dataset
			default:
				return usagef("--repo-type %q: must be model or dataset", repoType)
			}
			if include != "" {
				for _, p := range strings.Split(include, ",") {
					if p = strings.TrimSpace(p); p != "" {
						opts.AllowPatterns = append(opts.AllowPatterns, p)
					}
				}
				if len(opts.AllowPatterns) == 0 {
					return usagef("--include %q holds no pattern", include)
				}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
			defer stop()
			dir, err := hub.Download(ctx, args[0], opts)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, dir)
			return nil
		},
	})
}
