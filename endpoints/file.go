package endpoints

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/grpo-dev/grpo/internal/tomlschema"
)

// DefaultPath is where the Lab (and grpo init) keep the registry.
const DefaultPath = "configs/endpoints.toml"

// Client types of the Lab's registry. grpo speaks the first two; the
// others are accepted names that fail with a clear error when used.
const (
	TypeChat        = "openai_chat_completions"
	TypeCompletions = "openai_completions"
)

var knownTypes = []string{TypeChat, TypeCompletions, "openai_chat_completions_token", "openai_responses", "renderer", "anthropic_messages", "nemorl_chat_completions"}

// Endpoint is one [[endpoint]] table.
type Endpoint struct {
	ID    string
	Model string
	// URL is the API root, e.g. "https://api.openai.com/v1".
	URL string
	// KeyVar names the environment variable holding the API key; "" sends
	// no Authorization header.
	KeyVar string
	// Type is TypeChat (the default) or TypeCompletions.
	Type    string
	Headers map[string]string
}

// Registry is a parsed endpoints.toml: endpoint ids, each with its
// replicas in file order.
type Registry struct {
	Path string
	byID map[string][]Endpoint
	ids  []string
	// Warnings lists keys the file sets that grpo does not know (the Lab
	// may add some); they are ignored.
	Warnings []string
}

// keys of an [[endpoint]] table, with the Lab's alternative spellings.
var endpointKeys = []string{"endpoint_id", "model", "url", "api_base_url", "key", "api_key_var", "type", "api_client_type", "headers", "extra_headers"}

// Load reads path: an endpoints.toml file, or a directory holding one.
func Load(path string) (*Registry, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "endpoints.toml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("endpoints: %w", err)
	}
	return Parse(data, path)
}

// Parse reads an endpoints.toml given as data; source names it in errors.
func Parse(data []byte, source string) (*Registry, error) {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v", source, err)
	}
	r := &Registry{Path: source, byID: map[string][]Endpoint{}}
	var problems []string
	for k := range raw {
		if k != "endpoint" {
			problems = append(problems, fmt.Sprintf("top-level key %q is unknown; the file holds [[endpoint]] tables", k))
		}
	}
	var tables []any
	if v, ok := raw["endpoint"]; ok {
		if tables, ok = v.([]any); !ok {
			problems = append(problems, "endpoint must be an array of tables: write [[endpoint]], not [endpoint]")
		}
	}
	for i, t := range tables {
		tab, ok := t.(map[string]any)
		if !ok {
			problems = append(problems, fmt.Sprintf("[[endpoint]] %d is not a table", i+1))
			continue
		}
		ep, errs, warns := parseEndpoint(tab)
		for _, e := range errs {
			problems = append(problems, fmt.Sprintf("[[endpoint]] %d%s: %s", i+1, idNote(tab), e))
		}
		for _, w := range warns {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: [[endpoint]] %d%s: %s", source, i+1, idNote(tab), w))
		}
		if len(errs) == 0 {
			if _, seen := r.byID[ep.ID]; !seen {
				r.ids = append(r.ids, ep.ID)
			}
			r.byID[ep.ID] = append(r.byID[ep.ID], ep)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s:\n  %s", source, strings.Join(problems, "\n  "))
	}
	return r, nil
}

func idNote(tab map[string]any) string {
	if id, ok := tab["endpoint_id"].(string); ok && id != "" {
		return fmt.Sprintf(" (endpoint_id %q)", id)
	}
	return ""
}

// parseEndpoint checks one table as verifiers does: endpoint_id, model,
// url and key are strings (url/api_base_url and key/api_key_var are two
// spellings that must agree), type is one of the Lab's client types, and
// headers (or extra_headers) is a table of strings.
func parseEndpoint(tab map[string]any) (ep Endpoint, errs, warns []string) {
	str := func(key string) (string, bool) {
		v, ok := tab[key]
		if !ok {
			return "", false
		}
		s, isStr := v.(string)
		if !isStr {
			errs = append(errs, fmt.Sprintf("%s = %v: want a string", key, v))
		}
		return s, isStr
	}
	either := func(a, b string) (string, bool) {
		va, oka := str(a)
		vb, okb := str(b)
		if oka && okb && va != vb {
			errs = append(errs, fmt.Sprintf("%s = %q and %s = %q disagree; keep one", a, va, b, vb))
		}
		if oka {
			return va, true
		}
		return vb, okb
	}
	var ok bool
	if ep.ID, ok = str("endpoint_id"); !ok || ep.ID == "" {
		errs = append(errs, `endpoint_id is missing: give each [[endpoint]] an endpoint_id = "name"`)
	}
	if ep.Model, ok = str("model"); !ok || ep.Model == "" {
		errs = append(errs, `model is missing: the model name the server serves, e.g. model = "gpt-4.1-mini"`)
	}
	if ep.URL, ok = either("url", "api_base_url"); !ok || ep.URL == "" {
		errs = append(errs, `url is missing: the API root, e.g. url = "https://api.openai.com/v1"`)
	} else if !strings.HasPrefix(ep.URL, "http://") && !strings.HasPrefix(ep.URL, "https://") {
		errs = append(errs, fmt.Sprintf("url = %q: want an http:// or https:// address", ep.URL))
	}
	if ep.KeyVar, ok = either("key", "api_key_var"); !ok {
		errs = append(errs, `key is missing: the NAME of the environment variable holding the API key, e.g. key = "OPENAI_API_KEY" ("" for none)`)
	}
	if _, ok := tab["client_type"]; ok {
		errs = append(errs, "client_type is no longer a key of the registry; write type")
	}
	ep.Type, _ = either("type", "api_client_type")
	if ep.Type == "" {
		ep.Type = TypeChat
	}
	known := false
	for _, t := range knownTypes {
		known = known || t == ep.Type
	}
	if !known {
		errs = append(errs, fmt.Sprintf("type = %q is unknown; the Lab's types are %s", ep.Type, strings.Join(knownTypes, ", ")))
	}
	h, hasH := tab["headers"]
	eh, hasEH := tab["extra_headers"]
	if hasH && hasEH {
		errs = append(errs, "headers and extra_headers are both set; keep one")
	}
	if !hasH {
		h = eh
	}
	if h != nil {
		m, isMap := h.(map[string]any)
		if !isMap {
			errs = append(errs, "headers must be a table of strings, e.g. headers = { X-Team = \"t1\" }")
		}
		ep.Headers = map[string]string{}
		for k, v := range m {
			s, isStr := v.(string)
			if !isStr {
				errs = append(errs, fmt.Sprintf("headers.%s = %v: want a string", k, v))
			}
			ep.Headers[k] = s
		}
	}
	for k := range tab {
		if !contains(endpointKeys, k) && k != "client_type" {
			w := fmt.Sprintf("key %q is unknown and ignored", k)
			if c := tomlschema.Closest(k, endpointKeys); c != "" {
				w += fmt.Sprintf("; did you mean %q?", c)
			}
			warns = append(warns, w)
		}
	}
	sort.Strings(warns)
	sort.Strings(errs)
	return ep, errs, warns
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// Lookup returns the replicas of endpoint id.
func (r *Registry) Lookup(id string) ([]Endpoint, bool) {
	eps, ok := r.byID[id]
	return eps, ok
}

// IDs lists the endpoint ids in file order.
func (r *Registry) IDs() []string { return append([]string(nil), r.ids...) }

// Client returns a client for endpoint id's replicas.
func (r *Registry) Client(id string, o Options) (*Client, error) {
	eps, ok := r.byID[id]
	if !ok {
		msg := fmt.Sprintf("endpoint %q is not in %s", id, r.Path)
		if c := tomlschema.Closest(id, r.ids); c != "" {
			msg += fmt.Sprintf("; did you mean %q?", c)
		} else if len(r.ids) > 0 {
			msg += fmt.Sprintf(" (it has %s)", strings.Join(r.ids, ", "))
		}
		return nil, errors.New(msg)
	}
	return New(eps, o)
}
