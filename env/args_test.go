package env

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestArgsNormalized: TOML gives int64, JSON float64: both fine for int
// when integral, and an int is fine for a float.
func TestArgsNormalized(t *testing.T) {
	a, err := validateArgs("x", []ArgSpec{{Name: "n", Type: ArgInt, Default: 1}, {Name: "f", Type: ArgFloat, Default: 0.5}, {Name: "l", Type: ArgList, Default: []any{}}},
		map[string]any{"n": int64(3), "f": int64(2), "l": []string{"a"}})
	if err != nil || a.Int("n") != 3 || a.Float("f") != 2 || a.Strings("l")[0] != "a" {
		t.Errorf("args %v, %v", a, err)
	}
	if a, err := validateArgs("x", []ArgSpec{{Name: "n", Type: ArgInt, Default: 1}}, map[string]any{"n": 4.0}); err != nil || a.Int("n") != 4 {
		t.Errorf("JSON float for int: %v %v", a, err)
	}
	// A JSON row decoded with UseNumber (grpo env score's input) gives
	// json.Number, a string underneath: a number all the same, and never a
	// string argument.
	a, err = validateArgs("x", []ArgSpec{{Name: "n", Type: ArgInt, Default: 1}, {Name: "f", Type: ArgFloat, Default: 0.5}, {Name: "l", Type: ArgList, Default: []any{}}},
		map[string]any{"n": json.Number("3"), "f": json.Number("2.5"), "l": []any{json.Number("7")}})
	if err != nil || a.Int("n") != 3 || a.Float("f") != 2.5 || a.List("l")[0] != int64(7) {
		t.Errorf("json.Number args %v, %v", a, err)
	}
	if _, err := validateArgs("x", []ArgSpec{{Name: "s", Type: ArgString, Default: ""}}, map[string]any{"s": json.Number("3")}); err == nil || !strings.Contains(err.Error(), "got int 3") {
		t.Errorf("json.Number for a string arg: %v", err)
	}
	if a, _ := validateArgs("x", []ArgSpec{{Name: "n", Type: ArgInt, Default: 7}}, nil); a.Int("n") != 7 {
		t.Errorf("default not filled: %v", a)
	}
}
