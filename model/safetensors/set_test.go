package safetensors

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeSharded writes shards (file → tensor names) and an index listing
// weightMap verbatim, so a test can make the two disagree.
func writeSharded(t *testing.T, shards map[string][]string, weightMap string) string {
	t.Helper()
	dir := t.TempDir()
	for file, names := range shards {
		var ts []Tensor
		for i, n := range names {
			tensor, err := NewF32(n, []int{2}, []float32{float32(i), float32(len(n))})
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, tensor)
		}
		if err := Write(filepath.Join(dir, file), ts, map[string]string{"format": "pt"}); err != nil {
			t.Fatal(err)
		}
	}
	index := `{"metadata": {"total_size": 0}, "weight_map": ` + weightMap + `}`
	if err := os.WriteFile(filepath.Join(dir, IndexFileName), []byte(index), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestOpenDirSharded(t *testing.T) {
	dir := writeSharded(t, map[string][]string{
		"model-00001-of-00002.safetensors": {"a", "c"},
		"model-00002-of-00002.safetensors": {"b"},
	}, `{"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors", "c": "model-00001-of-00002.safetensors"}`)
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Names(); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Fatalf("Names = %v", got)
	}
	b, ok := s.Tensor("b")
	if !ok {
		t.Fatal("b missing")
	}
	if v, err := b.Float32s(); err != nil || !reflect.DeepEqual(v, []float32{0, 1}) {
		t.Errorf("b = %v, %v", v, err)
	}
	if _, ok := s.Tensor("zzz"); ok {
		t.Error("Tensor found a name that is not there")
	}
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestOpenDirSingle(t *testing.T) {
	dir := t.TempDir()
	w, _ := NewF32("x", []int{1}, []float32{3})
	if err := Write(filepath.Join(dir, SingleFileName), []Tensor{w}, nil); err != nil {
		t.Fatal(err)
	}
	s, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Names(); !reflect.DeepEqual(got, []string{"x"}) {
		t.Errorf("Names = %v", got)
	}
}

func TestOpenDirRejects(t *testing.T) {
	const one, two = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	cases := []struct {
		name      string
		shards    map[string][]string
		weightMap string
		want      string
	}{
		{"missing shard", map[string][]string{one: {"a"}}, `{"a": "` + one + `", "b": "` + two + `"}`,
			`shard "` + two + `" listed in weight_map is missing`},
		{"tensor not in shard", map[string][]string{one: {"a"}, two: {"b"}}, `{"a": "` + one + `", "b": "` + two + `", "c": "` + two + `"}`,
			`weight_map puts tensor "c" in ` + two + `, but that shard does not hold it`},
		{"tensor in two shards", map[string][]string{one: {"a"}, two: {"a", "b"}}, `{"a": "` + one + `", "b": "` + two + `"}`,
			`tensor "a" is stored in two shards, ` + one + ` and ` + two},
		{"name listed twice", map[string][]string{one: {"a"}, two: {"b"}}, `{"a": "` + one + `", "a": "` + two + `", "b": "` + two + `"}`,
			`weight_map lists tensor "a" twice`},
		{"unlisted tensor", map[string][]string{one: {"a", "z"}}, `{"a": "` + one + `"}`,
			`shard ` + one + ` holds tensor "z", which weight_map does not list`},
		{"path escape", map[string][]string{one: {"a"}}, `{"a": "../` + one + `"}`,
			`weight_map["a"] = "../` + one + `" is not a file name in the model directory`},
		{"no weight_map", map[string][]string{one: {"a"}}, `null`, `missing "weight_map"`},
		{"weight_map not object", map[string][]string{one: {"a"}}, `["a"]`, `"weight_map" must be an object`},
		{"shard not string", map[string][]string{one: {"a"}}, `{"a": 1}`, `weight_map["a"] must be a shard file name string`},
		{"empty", map[string][]string{one: {"a"}}, `{}`, `"weight_map" is empty`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeSharded(t, c.shards, c.weightMap)
			s, err := OpenDir(dir)
			if err == nil {
				s.Close()
				t.Fatalf("OpenDir accepted it, want %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), IndexFileName) {
				t.Errorf("error %q\nwant it to name the index and contain %q", err, c.want)
			}
		})
	}
	// A corrupt shard reports the shard's own path.
	dir := writeSharded(t, map[string][]string{one: {"a"}}, `{"a": "`+one+`"}`)
	os.WriteFile(filepath.Join(dir, one), []byte("junk"), 0o644)
	if _, err := OpenDir(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, one)+": file is 4 bytes") {
		t.Errorf("corrupt shard: err = %v", err)
	}
	if _, err := OpenDir(t.TempDir()); err == nil || !strings.Contains(err.Error(), "holds neither model.safetensors nor model.safetensors.index.json") {
		t.Errorf("empty dir: err = %v", err)
	}
}
