package env

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/grpo-dev/grpo/model/hub"
)

// HubOptions are the hub settings dataset downloads use; the zero value
// reads HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, HF_HUB_OFFLINE… as
// huggingface_hub does. Tests point it at a fake hub.
var HubOptions hub.Options

// hubSplitPatterns are the places Hugging Face datasets keep a split's
// parquet files: <config>/<split>-*.parquet (openai/gsm8k: main/test-…),
// data/<split>-*.parquet (a dataset with one config), and the parquet
// conversion's <config>/<split>/*.parquet.
func hubSplitPatterns(config, split string) []string {
	if config == "" {
		config = "default"
	}
	return []string{
		config + "/" + split + "-*.parquet",
		"data/" + split + "-*.parquet",
		config + "/" + split + "/*.parquet",
		split + "-*.parquet",
	}
}

// LoadHubRows returns the rows of one split of a Hugging Face dataset:
// its parquet files are fetched into the HF cache (or found there) through
// package hub, the same code that downloads models, and read in name order.
// config is the dataset's config ("main" for openai/gsm8k; "" for none).
func LoadHubRows(ctx context.Context, repo, config, split string) ([]Row, error) {
	opts := HubOptions
	opts.RepoType = hub.Dataset
	opts.AllowPatterns = hubSplitPatterns(config, split)
	dir, err := hub.Resolve(ctx, repo, opts)
	if err != nil {
		return nil, fmt.Errorf("dataset %s split %q: %w", repo, split, err)
	}
	files := matchingFiles(dir, opts.AllowPatterns)
	if len(files) == 0 {
		return nil, fmt.Errorf("dataset %s: no parquet file for split %q under %s (looked for %s); check the split and config names",
			repo, split, dir, strings.Join(opts.AllowPatterns, ", "))
	}
	var rows []Row
	for _, f := range files {
		r, err := LoadParquet(f)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// matchingFiles lists the files under dir whose slash path matches one of
// the patterns, sorted so that shards come in order.
func matchingFiles(dir string, patterns []string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		for _, pat := range patterns {
			if ok, _ := pathMatch(pat, rel); ok {
				out = append(out, p)
				break
			}
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// pathMatch is path.Match, whose * stops at '/', as the patterns above
// need (a split's files sit at a fixed depth).
func pathMatch(pattern, name string) (bool, error) {
	return filepath.Match(filepath.FromSlash(pattern), filepath.FromSlash(name))
}
