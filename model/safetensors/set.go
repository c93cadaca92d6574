package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The file names Hugging Face uses for a model's weights.
const (
	SingleFileName = "model.safetensors"
	IndexFileName  = "model.safetensors.index.json"
)

// Set is the weights of one model directory: a single file or the shards an
// index lists, seen as one name → tensor map.
type Set struct {
	dir     string
	files   []*File
	tensors map[string]Tensor
	names   []string
}

// OpenDir opens dir/model.safetensors.index.json with its shards when the
// index exists, else dir/model.safetensors.
func OpenDir(dir string) (*Set, error) {
	indexPath := filepath.Join(dir, IndexFileName)
	if _, err := os.Stat(indexPath); err == nil {
		return openSharded(dir, indexPath)
	}
	single := filepath.Join(dir, SingleFileName)
	if _, err := os.Stat(single); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: holds neither %s nor %s (is this a Hugging Face model directory?)", dir, SingleFileName, IndexFileName)
	}
	f, err := Open(single)
	if err != nil {
		return nil, err
	}
	s := &Set{dir: dir, files: []*File{f}, tensors: f.tensors, names: f.names}
	return s, nil
}

func openSharded(dir, indexPath string) (_ *Set, err error) {
	weightMap, err := readIndex(indexPath)
	if err != nil {
		return nil, err
	}
	byShard := map[string][]string{}
	for name, shard := range weightMap {
		byShard[shard] = append(byShard[shard], name)
	}
	shards := make([]string, 0, len(byShard))
	for shard := range byShard {
		shards = append(shards, shard)
	}
	sort.Strings(shards)
	s := &Set{dir: dir, tensors: map[string]Tensor{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	owner := map[string]string{} // tensor name → the shard that holds it
	for _, shard := range shards {
		p := filepath.Join(dir, shard)
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: shard %q listed in weight_map is missing from %s (incomplete download?)", indexPath, shard, dir)
		}
		f, err := Open(p)
		if err != nil {
			return nil, err
		}
		s.files = append(s.files, f)
		for _, name := range f.names {
			if prev, dup := owner[name]; dup {
				return nil, fmt.Errorf("%s: tensor %q is stored in two shards, %s and %s", indexPath, name, prev, shard)
			}
			owner[name] = shard
			if weightMap[name] != shard {
				if weightMap[name] == "" {
					return nil, fmt.Errorf("%s: shard %s holds tensor %q, which weight_map does not list", indexPath, shard, name)
				}
				return nil, fmt.Errorf("%s: weight_map puts tensor %q in %s, but shard %s holds it", indexPath, name, weightMap[name], shard)
			}
			s.tensors[name] = f.tensors[name]
		}
		for _, name := range byShard[shard] {
			if _, ok := f.tensors[name]; !ok {
				return nil, fmt.Errorf("%s: weight_map puts tensor %q in %s, but that shard does not hold it", indexPath, name, shard)
			}
		}
	}
	for name := range s.tensors {
		s.names = append(s.names, name)
	}
	sort.Strings(s.names)
	return s, nil
}

// readIndex returns the index's weight_map, rejecting names listed twice and
// shard names that would leave the model directory.
func readIndex(indexPath string) (map[string]string, error) {
	raw, err := os.ReadFile(indexPath)
	if err != nil {
		return nil, err
	}
	var index struct {
		WeightMap json.RawMessage `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", indexPath, err)
	}
	if len(index.WeightMap) == 0 || string(index.WeightMap) == "null" {
		return nil, fmt.Errorf("%s: missing \"weight_map\" (want {\"weight_map\": {tensor name: shard file}})", indexPath)
	}
	// Decode by tokens: json.Unmarshal into a map would silently keep only
	// the last of two entries for one tensor name.
	dec := json.NewDecoder(bytes.NewReader(index.WeightMap))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%s: \"weight_map\" must be an object of tensor name → shard file", indexPath)
	}
	m := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: \"weight_map\": %v", indexPath, err)
		}
		name, _ := tok.(string)
		var shard string
		if err := dec.Decode(&shard); err != nil {
			return nil, fmt.Errorf("%s: weight_map[%q] must be a shard file name string", indexPath, name)
		}
		if _, dup := m[name]; dup {
			return nil, fmt.Errorf("%s: weight_map lists tensor %q twice", indexPath, name)
		}
		if shard == "" || shard != filepath.Base(shard) || strings.ContainsAny(shard, `/\`) || shard == ".." || shard == "." {
			return nil, fmt.Errorf("%s: weight_map[%q] = %q is not a file name in the model directory", indexPath, name, shard)
		}
		m[name] = shard
	}
	if _, err := dec.Token(); err != nil && err != io.EOF {
		return nil, fmt.Errorf("%s: \"weight_map\": %v", indexPath, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("%s: \"weight_map\" is empty", indexPath)
	}
	return m, nil
}

// Dir is the model directory the set was opened from.
func (s *Set) Dir() string { return s.dir }

// Names lists every tensor name across shards, sorted.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Tensor looks a tensor up by name in whichever shard holds it.
func (s *Set) Tensor(name string) (Tensor, bool) {
	t, ok := s.tensors[name]
	return t, ok
}

// Close releases every shard's mapping, returning the first error.
func (s *Set) Close() error {
	var first error
	for _, f := range s.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.files = nil
	return first
}
