package hub

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// missingFile names the first file the snapshot dir lacks for its repo type,
// or returns "" when the snapshot is complete. The cache keeps no listing of
// the repo, and a snapshot written by Python may hold any subset of it, so
// completeness is judged from what a consumer needs: for a model, config.json,
// tokenizer.json and every safetensors shard its index names (or at least one
// .safetensors file when there is no index), each only when AllowPatterns
// would fetch it; for a dataset, at least one file the patterns select.
func (s *settings) missingFile(dir string) string {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return "snapshot " + filepath.Base(dir)
	}
	if s.repoType == Dataset {
		if len(s.snapshotFiles(dir)) == 0 {
			return "any file matching " + strings.Join(s.AllowPatterns, ",")
		}
		return ""
	}
	for _, name := range []string{"config.json", "tokenizer.json"} {
		if matchAny(s.AllowPatterns, name) && !exists(filepath.Join(dir, name)) {
			return name
		}
	}
	if !matchAny(s.AllowPatterns, "model.safetensors") {
		return ""
	}
	const index = "model.safetensors.index.json"
	if b, err := os.ReadFile(filepath.Join(dir, index)); err == nil {
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if json.Unmarshal(b, &idx) != nil || len(idx.WeightMap) == 0 {
			return index + " (unreadable)"
		}
		shards := make([]string, 0, len(idx.WeightMap))
		for _, shard := range idx.WeightMap {
			shards = append(shards, shard)
		}
		sort.Strings(shards)
		for _, shard := range shards {
			if !filepath.IsLocal(shard) || !exists(filepath.Join(dir, shard)) {
				return shard
			}
		}
		return ""
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	for _, m := range matches {
		if exists(m) {
			return ""
		}
	}
	return "model.safetensors"
}

// snapshotFiles lists the regular files (symlinks followed) under dir that
// AllowPatterns select, as slash-separated paths relative to dir.
func (s *settings) snapshotFiles(dir string) []string {
	var files []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		if exists(path) && matchAny(s.AllowPatterns, rel) {
			files = append(files, rel)
		}
		return nil
	})
	return files
}
