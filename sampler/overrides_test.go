package sampler

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pelletier/go-toml/v2"
)

func TestOverridesApply(t *testing.T) {
	n, temp, k := 64, 0.5, 3
	p := DefaultParams()
	p.Stop = []string{"x"}
	Overrides{MaxTokens: &n, Temperature: &temp, TopK: &k}.Apply(&p)
	want := DefaultParams()
	want.MaxTokens, want.Temperature, want.TopK, want.Stop = 64, 0.5, 3, []string{"x"}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("got %+v, want %+v", p, want)
	}
	Overrides{}.Apply(&p)
	if !reflect.DeepEqual(p, want) {
		t.Errorf("an empty override changed %+v", p)
	}
}

func TestOverridesOver(t *testing.T) {
	a, b, c := 1.0, 2.0, 0.9
	top := Overrides{Temperature: &a, Stop: StopList{"s"}}
	got := Overrides{Temperature: &b}.Over(Overrides{Temperature: &a, TopP: &c, Stop: StopList{"s"}})
	if *got.Temperature != 2 || *got.TopP != 0.9 || !reflect.DeepEqual(got.Stop, StopList{"s"}) || got.MaxTokens != nil {
		t.Errorf("got %+v", got)
	}
	if *top.Temperature != 1 {
		t.Error("Over changed its base")
	}
}

// TestOverridesKeys: JSON takes stop as a string or a list, TOML as a
// list; the keys are the config's and the API's names.
func TestOverridesKeys(t *testing.T) {
	var j Overrides
	if err := json.Unmarshal([]byte(`{"max_tokens": 5, "top_p": 0.5, "top_k": -1, "min_p": 0.1, "stop": "END"}`), &j); err != nil {
		t.Fatal(err)
	}
	if *j.MaxTokens != 5 || *j.TopP != 0.5 || *j.TopK != -1 || *j.MinP != 0.1 || !reflect.DeepEqual(j.Stop, StopList{"END"}) {
		t.Errorf("json: %+v", j)
	}
	if err := json.Unmarshal([]byte(`{"stop": 3}`), &j); err == nil {
		t.Error("json: stop = 3 accepted")
	}
	var tm Overrides
	if err := toml.Unmarshal([]byte("temperature = 0.7\nstop = [\"a\", \"b\"]"), &tm); err != nil {
		t.Fatal(err)
	}
	if *tm.Temperature != 0.7 || !reflect.DeepEqual(tm.Stop, StopList{"a", "b"}) || tm.MaxTokens != nil {
		t.Errorf("toml: %+v", tm)
	}
}
