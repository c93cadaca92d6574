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

// hubJSONLPatterns are where a dataset uploaded as JSON lines keeps a
// split, named as Hugging Face's split inference reads them; they are used
// only when the split has no parquet file, so a repo with both is not read
// twice.
func hubJSONLPatterns(split string) []string {
	var out []string
	for _, ext := range []string{".jsonl", ".jsonl.gz"} {
		out = append(out, split+ext, "data/"+split+ext, "data/"+split+"-*"+ext, split+"-*"+ext)
	}
	return out
}

// LoadHubRows returns the rows of one split of a Hugging Face dataset:
// its parquet files are fetched into the HF cache (or found there) through
// package hub, the same code that downloads models, and read in name order.
// config is the dataset's config ("main" for openai/gsm8k; "" for none);
// opts are the caller's hub settings (Options.Hub).
func LoadHubRows(ctx context.Context, opts hub.Options, repo, config, split string) ([]Row, error) {
	opts.RepoType = hub.Dataset
	parquets, jsonls := hubSplitPatterns(config, split), hubJSONLPatterns(split)
	opts.AllowPatterns = append(append([]string(nil), parquets...), jsonls...)
	dir, err := hub.Resolve(ctx, repo, opts)
	if err != nil {
		return nil, fmt.Errorf("dataset %s split %q: %w", repo, split, err)
	}
	files := matchingFiles(dir, parquets)
	if len(files) == 0 {
		files = matchingFiles(dir, jsonls)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("dataset %s: no parquet or JSONL file for split %q under %s (looked for %s); check the split and config names",
			repo, split, dir, strings.Join(opts.AllowPatterns, ", "))
	}
	var rows []Row
	for _, f := range files {
		r, err := LoadRows(f)
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

// DatasetUnavailableError says that a builtin's hub dataset could not be
// had, and which arg selects data that needs no hub.
type DatasetUnavailableError struct {
	Env, Dataset, Split string
	// Fallback is the arg setting that avoids the hub, as a config writes it.
	Fallback string
	Detail   string
	Err      error
}

func (e *DatasetUnavailableError) Error() string {
	return fmt.Sprintf("env %s: dataset %s (split %q) is not in the Hugging Face cache and cannot be downloaded: %s; or, to run without it, set args %s",
		e.Env, e.Dataset, e.Split, e.Detail, e.Fallback)
}

func (e *DatasetUnavailableError) Unwrap() error { return e.Err }
