package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/pelletier/go-toml/v2"
)

// Endpoint is one [[endpoint]] of configs/endpoints.toml, the Lab's
// registry of hosted models (verifiers 8d4b33247's load_endpoints):
//
//	[[endpoint]]
//	endpoint_id = "gpt-4.1-mini"      # what -m / endpoint_id / model name
//	model = "gpt-4.1-mini"            # the model id the API expects
//	url = "https://api.openai.com/v1" # api_base_url is accepted too
//	key = "OPENAI_API_KEY"            # the environment variable holding the key (api_key_var)
//	type = "openai_chat_completions"  # optional (api_client_type)
//
// Entries that share an endpoint_id are alternatives for one model (the
// Lab spreads requests over them).
type Endpoint struct {
	ID    string
	Model string
	URL   string
	// KeyVar names the environment variable with the API key; the key
	// itself never sits in the file.
	KeyVar string
	// Type is the client type ("" = the Lab's default, chat completions).
	Type    string
	Headers map[string]string
}

// endpointTypes are the client types verifiers accepts.
var endpointTypes = []string{"openai_completions", "openai_chat_completions", "openai_chat_completions_token", "anthropic_messages"}

// endpointKeys are the keys an [[endpoint]] may have; verifiers reads
// these and ignores others, grpo names an unknown one (a typo would
// otherwise lose a setting silently).
var endpointKeys = []string{"endpoint_id", "model", "url", "api_base_url", "key", "api_key_var", "type", "api_client_type", "headers", "extra_headers"}

// Endpoints are the entries of an endpoints.toml, in file order.
type Endpoints struct {
	Path string
	List []Endpoint
}

// Lookup returns the entries of endpoint id (nil when none).
func (e *Endpoints) Lookup(id string) []Endpoint {
	var out []Endpoint
	for _, ep := range e.List {
		if ep.ID == id {
			out = append(out, ep)
		}
	}
	return out
}

// LoadEndpoints reads an endpoints.toml (path may be its directory, as
// endpoints_path = "../endpoints.toml" or "configs" are both written).
// Every problem is reported, each as file:line:col with the fix.
func LoadEndpoints(path string) (*Endpoints, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "endpoints.toml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading endpoints: %w", err)
	}
	var raw struct {
		Endpoint []map[string]any `toml:"endpoint"`
	}
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v; the file holds [[endpoint]] tables with endpoint_id, model, url and key", path, err)
	}
	src := tomlschema.Scan(path, data)
	out := &Endpoints{Path: path}
	var errs []error
	for i, m := range raw.Endpoint {
		ep, problems := parseEndpoint(src, i, m)
		errs = append(errs, problems...)
		out.List = append(out.List, ep)
	}
	if len(raw.Endpoint) == 0 && len(errs) == 0 {
		errs = append(errs, src.At("no [[endpoint]] table; add one per model: [[endpoint]] endpoint_id = \"…\" model = \"…\" url = \"…\" key = \"ENV_VAR\""))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func parseEndpoint(src *tomlschema.Source, i int, m map[string]any) (Endpoint, []error) {
	at := func(key, msg string) error {
		p := "endpoint." + strconv.Itoa(i)
		return src.At(fmt.Sprintf("[[endpoint]] %d: %s", i+1, msg), p+"."+key, p)
	}
	var errs []error
	str := func(keys ...string) string {
		var val, from string
		for _, k := range keys {
			v, ok := m[k]
			if !ok {
				continue
			}
			s, isStr := v.(string)
			if !isStr {
				errs = append(errs, at(k, fmt.Sprintf("%s must be a string", k)))
				continue
			}
			if from != "" && s != val {
				errs = append(errs, at(k, fmt.Sprintf("%s = %q conflicts with %s = %q; keep one", k, s, from, val)))
				continue
			}
			val, from = s, k
		}
		return val
	}
	ep := Endpoint{ID: str("endpoint_id"), Model: str("model"), URL: str("url", "api_base_url"), KeyVar: str("key", "api_key_var"), Type: str("type", "api_client_type")}
	for _, req := range [][]string{{"endpoint_id"}, {"model"}, {"url", "api_base_url"}, {"key", "api_key_var"}} {
		if !slices.ContainsFunc(req, func(k string) bool { _, ok := m[k]; return ok }) {
			errs = append(errs, at(req[0], fmt.Sprintf("%s is missing; every endpoint needs endpoint_id, model, url and key (the name of the environment variable with the API key)", req[0])))
		}
	}
	if ep.Type != "" && !slices.Contains(endpointTypes, ep.Type) {
		errs = append(errs, at("type", fmt.Sprintf("type %q is unknown; use one of %v", ep.Type, endpointTypes)))
	}
	_, h1 := m["headers"]
	_, h2 := m["extra_headers"]
	if h1 && h2 {
		errs = append(errs, at("extra_headers", "use only one of headers and extra_headers"))
	}
	for _, k := range []string{"headers", "extra_headers"} {
		if v, ok := m[k]; ok {
			t, isTable := v.(map[string]any)
			if !isTable {
				errs = append(errs, at(k, k+" must be a table of header = value strings"))
				continue
			}
			ep.Headers = map[string]string{}
			for hk, hv := range t {
				s, ok := hv.(string)
				if !ok {
					errs = append(errs, at(k+"."+hk, fmt.Sprintf("header %q must be a string", hk)))
				}
				ep.Headers[hk] = s
			}
		}
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(endpointKeys, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		msg := fmt.Sprintf("unknown key %s", k)
		if near := tomlschema.Closest(k, endpointKeys); near != "" {
			msg += fmt.Sprintf("; did you mean %s?", near)
		} else {
			msg += fmt.Sprintf("; an endpoint takes %v", endpointKeys)
		}
		errs = append(errs, at(k, msg))
	}
	return ep, errs
}
