package endpoints

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
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

// knownTypes are the client types verifiers accepts (8d4b33247's four and
// its later ones), so a Lab file loads whatever it names.
var knownTypes = []string{TypeChat, TypeCompletions, "openai_chat_completions_token", "anthropic_messages", "openai_responses", "renderer", "nemorl_chat_completions"}

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
}

// keys of an [[endpoint]] table, with the Lab's alternative spellings.
var endpointKeys = []string{"endpoint_id", "model", "url", "api_base_url", "key", "api_key_var", "type", "api_client_type", "headers", "extra_headers"}

// Load reads path: an endpoints.toml file, or a directory holding one (as
// endpoints_path = "configs" and "../endpoints.toml" are both written).
func Load(path string) (*Registry, error) {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		path = filepath.Join(path, "endpoints.toml")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading endpoints: %w", err)
	}
	return Parse(data, path)
}

// Parse reads an endpoints.toml given as data; source names it in errors.
// Every problem is reported, each as source:line:col with its fix. Keys
// verifiers does not read are errors here (it ignores them), since a typo
// would otherwise lose a setting silently.
func Parse(data []byte, source string) (*Registry, error) {
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %v; the file holds [[endpoint]] tables with endpoint_id, model, url and key", source, err)
	}
	src := tomlschema.Scan(source, data)
	r := &Registry{Path: source, byID: map[string][]Endpoint{}}
	var errs []error
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "endpoint" {
			errs = append(errs, src.At(fmt.Sprintf("top-level key %s is unknown; the file holds [[endpoint]] tables", k), k))
		}
	}
	var tables []any
	if v, ok := raw["endpoint"]; ok {
		if tables, ok = v.([]any); !ok {
			errs = append(errs, src.At("endpoint must be an array of tables: write [[endpoint]], not [endpoint]", "endpoint"))
		}
	}
	for i, t := range tables {
		tab, ok := t.(map[string]any)
		if !ok {
			errs = append(errs, src.At(fmt.Sprintf("[[endpoint]] %d is not a table", i+1), "endpoint"))
			continue
		}
		ep, problems := parseEndpoint(src, i, tab)
		errs = append(errs, problems...)
		if len(problems) == 0 {
			if _, seen := r.byID[ep.ID]; !seen {
				r.ids = append(r.ids, ep.ID)
			}
			r.byID[ep.ID] = append(r.byID[ep.ID], ep)
		}
	}
	if len(tables) == 0 && len(errs) == 0 {
		errs = append(errs, src.At(`no [[endpoint]] table; add one per model: [[endpoint]] endpoint_id = "…" model = "…" url = "…" key = "ENV_VAR"`))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// parseEndpoint checks table i as verifiers does: endpoint_id, model, url
// and key are strings (url/api_base_url, key/api_key_var and
// type/api_client_type are two spellings that must agree), type is one of
// the Lab's client types, headers (or extra_headers) a table of strings.
// Each problem points at its key's line.
func parseEndpoint(src *tomlschema.Source, i int, tab map[string]any) (Endpoint, []error) {
	at := func(key, msg string) error {
		p := "endpoint." + strconv.Itoa(i)
		return src.At(fmt.Sprintf("[[endpoint]] %d: %s", i+1, msg), p+"."+key, p)
	}
	var errs []error
	str := func(keys ...string) string {
		var val, from string
		for _, k := range keys {
			v, ok := tab[k]
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
		if !slices.ContainsFunc(req, func(k string) bool { _, ok := tab[k]; return ok }) {
			errs = append(errs, at(req[0], fmt.Sprintf("%s is missing; every endpoint needs endpoint_id, model, url and key (the name of the environment variable with the API key, \"\" for none)", req[0])))
		}
	}
	if _, ok := tab["endpoint_id"]; ok && ep.ID == "" {
		errs = append(errs, at("endpoint_id", "endpoint_id is empty; name the endpoint"))
	}
	if ep.URL != "" && !strings.HasPrefix(ep.URL, "http://") && !strings.HasPrefix(ep.URL, "https://") {
		errs = append(errs, at("url", fmt.Sprintf("url = %q: want an http:// or https:// address", ep.URL)))
	}
	if ep.Type == "" {
		ep.Type = TypeChat
	} else if !slices.Contains(knownTypes, ep.Type) {
		errs = append(errs, at("type", fmt.Sprintf("type %q is unknown; use one of %v", ep.Type, knownTypes)))
	}
	_, h1 := tab["headers"]
	_, h2 := tab["extra_headers"]
	if h1 && h2 {
		errs = append(errs, at("extra_headers", "use only one of headers and extra_headers"))
	}
	for _, k := range []string{"headers", "extra_headers"} {
		v, ok := tab[k]
		if !ok {
			continue
		}
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
	var unknown []string
	for k := range tab {
		if !slices.Contains(endpointKeys, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		msg := fmt.Sprintf("unknown key %s", k)
		switch near := tomlschema.Closest(k, endpointKeys); {
		case k == "client_type":
			msg += "; verifiers no longer reads it: write type"
		case near != "":
			msg += fmt.Sprintf("; did you mean %s?", near)
		default:
			msg += fmt.Sprintf("; an endpoint takes %v", endpointKeys)
		}
		errs = append(errs, at(k, msg))
	}
	return ep, errs
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

// LoadOrDefault reads the registry at path when given (it must exist),
// else DefaultPath when there is one; nil when neither.
func LoadOrDefault(path string) (*Registry, error) {
	if path == "" {
		if _, err := os.Stat(DefaultPath); err != nil {
			return nil, nil
		}
		path = DefaultPath
	}
	return Load(path)
}
