package kernels

import (
	"fmt"
	"math"
)

// SampleParams are the sampling transforms of one row of Sample. They are
// the innermost link of the one sampling-parameter type: sampler.Params
// embeds them and the run config's [sampling] section embeds
// sampler.Params, so the toml tags here are the config's keys and
// Validate is the one range check of these four knobs.
type SampleParams struct {
	// Temperature divides the logits; 0 is greedy.
	Temperature float64 `toml:"temperature"`
	// TopP in (0, 1]; 1 disables it.
	TopP float64 `toml:"top_p"`
	// TopK keeps the TopK most likely tokens; 0 or -1 disables it (so does
	// a value ≥ the candidates). Both spellings of "off" are accepted
	// because vLLM and Prime write -1 and Go's zero value is 0.
	TopK int `toml:"top_k"`
	// MinP in [0, 1]; 0 disables it.
	MinP float64 `toml:"min_p"`
}

// ParamError is a sampling parameter outside its range. Layers above
// prefix it with their own context ("[sampling] ", a file position), so
// the message starts with the key.
type ParamError struct {
	// Key is the parameter's config key ("top_p").
	Key string
	// Value is the value given.
	Value any
	// Want says what the value must be and which value turns it off.
	Want string
}

func (e *ParamError) Error() string { return fmt.Sprintf("%s = %v: %s", e.Key, e.Value, e.Want) }

// Validate reports the first parameter outside its range as a *ParamError.
func (p SampleParams) Validate() error {
	switch {
	case !(p.Temperature >= 0) || math.IsInf(p.Temperature, 1):
		return &ParamError{"temperature", p.Temperature, "must be ≥ 0 and finite (0 is greedy)"}
	case !(p.TopP > 0 && p.TopP <= 1):
		return &ParamError{"top_p", p.TopP, "must be in (0, 1]; 1 disables it"}
	case p.TopK < -1:
		return &ParamError{"top_k", p.TopK, "must be a count ≥ 1, or 0 or -1 to disable it"}
	case !(p.MinP >= 0 && p.MinP <= 1):
		return &ParamError{"min_p", p.MinP, "must be in [0, 1]; 0 disables it"}
	}
	return nil
}

// CheckSampleArgs panics, naming backend and the row, when Sample's host
// arguments do not describe rows valid rows; backends call it first.
func CheckSampleArgs(backend string, rows int, u []float64, p []SampleParams) {
	if len(u) != rows || len(p) != rows {
		panic(fmt.Sprintf("%s: Sample: %d rows but %d draws and %d parameter sets", backend, rows, len(u), len(p)))
	}
	for r := range rows {
		if err := p[r].Validate(); err != nil {
			// A shape-mistake panic keeps the terse "key value" form of
			// the other ops' panics.
			e := err.(*ParamError)
			panic(fmt.Sprintf("%s: Sample: row %d: %s %v: %s", backend, r, e.Key, e.Value, e.Want))
		}
		if !(u[r] >= 0 && u[r] < 1) {
			panic(fmt.Sprintf("%s: Sample: row %d: u = %v outside [0, 1)", backend, r, u[r]))
		}
	}
}
