package sampler

import (
	"encoding/json"
	"errors"
)

// Overrides are sampling settings given one by one and laid over resolved
// Params: an eval config's sampling keys, `grpo eval`'s flags, GEPA's
// sampling_args, an OpenAI-style request's fields. A nil field is unset
// and keeps what it is laid over; Params.Validate judges the result, so
// an override has no range check of its own. Seeds are not here: each of
// those layers seeds a whole run or request, from which the per-sequence
// Params.Seed is derived (DeriveSeed).
type Overrides struct {
	MaxTokens   *int     `toml:"max_tokens" json:"max_tokens"`
	Temperature *float64 `toml:"temperature" json:"temperature"`
	TopP        *float64 `toml:"top_p" json:"top_p"`
	TopK        *int     `toml:"top_k" json:"top_k"`
	MinP        *float64 `toml:"min_p" json:"min_p"`
	Stop        StopList `toml:"stop" json:"stop"`
}

// Apply lays the set fields over p.
func (o Overrides) Apply(p *Params) {
	if o.MaxTokens != nil {
		p.MaxTokens = *o.MaxTokens
	}
	if o.Temperature != nil {
		p.Temperature = *o.Temperature
	}
	if o.TopP != nil {
		p.TopP = *o.TopP
	}
	if o.TopK != nil {
		p.TopK = *o.TopK
	}
	if o.MinP != nil {
		p.MinP = *o.MinP
	}
	if o.Stop != nil {
		p.Stop = o.Stop
	}
}

// Over is o laid over base: o's set fields, base's for the others.
func (o Overrides) Over(base Overrides) Overrides {
	if o.MaxTokens == nil {
		o.MaxTokens = base.MaxTokens
	}
	if o.Temperature == nil {
		o.Temperature = base.Temperature
	}
	if o.TopP == nil {
		o.TopP = base.TopP
	}
	if o.TopK == nil {
		o.TopK = base.TopK
	}
	if o.MinP == nil {
		o.MinP = base.MinP
	}
	if o.Stop == nil {
		o.Stop = base.Stop
	}
	return o
}

// StopList is a list of stop strings. In JSON it may also be one string,
// as OpenAI's "stop" may; TOML keeps to a list.
type StopList []string

func (s *StopList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = StopList{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("want a string or a list of strings")
	}
	*s = many
	return nil
}
