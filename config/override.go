package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/pelletier/go-toml/v2"
)

// Override is one setting given on the command line and laid over the
// config file: grpo train's --set KEY=VALUE, and --max-steps, --batch-size
// and --seed, which set one key each. It is written into the file's text
// (see Config.Text), so the run directory records the config that ran and
// a resumed run gets it back; the schema and Validate judge it like any key
// of the file, and its problems name the flag.
type Override struct {
	// Flag is the flag as the user gave it ("--set sampling.temperature=0.7",
	// "--max-steps 5"); messages start with it.
	Flag string
	// Path is a dotted key: "max_steps", "sampling.temperature",
	// "env[0].args.n" (or "env.0.args.n"); an array block must exist in the
	// file.
	Path string
	// Value is a TOML value ("0.7", `"Qwen/Qwen3-1.7B"`, "[1, 2]",
	// "{ n = 5 }"); a bare word that is not one is taken as a string, so
	// model=Qwen/Qwen3-1.7B works unquoted.
	Value string
}

// ParseSet reads the argument of --set, KEY=VALUE.
func ParseSet(arg string) (Override, error) {
	key, value, ok := strings.Cut(arg, "=")
	key = strings.TrimSpace(key)
	if !ok || key == "" {
		return Override{}, fmt.Errorf("--set %s: want KEY=VALUE, e.g. --set sampling.temperature=0.7 or --set env[0].args.num_train_examples=500", arg)
	}
	return Override{Flag: "--set " + arg, Path: key, Value: strings.TrimSpace(value)}, nil
}

// splitPath turns "env[0].args.n" or "env.0.args.n" into indexed parts.
func splitPath(path string) ([]string, error) {
	var parts []string
	for _, p := range strings.Split(path, ".") {
		for p != "" {
			i := strings.IndexByte(p, '[')
			if i < 0 {
				parts = append(parts, p)
				break
			}
			j := strings.IndexByte(p, ']')
			if j < i {
				return nil, fmt.Errorf("key %q: unbalanced [ ]", path)
			}
			if i > 0 {
				parts = append(parts, p[:i])
			}
			if _, err := strconv.Atoi(p[i+1 : j]); err != nil {
				return nil, fmt.Errorf("key %q: [%s] is not an array index", path, p[i+1:j])
			}
			parts = append(parts, p[i+1:j])
			p = p[j+1:]
		}
	}
	for _, p := range parts {
		if p == "" {
			return nil, fmt.Errorf("key %q has an empty part", path)
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("empty key")
	}
	return parts, nil
}

// tomlValue is v as a TOML value: itself when it parses as one, else v
// quoted as a string.
func tomlValue(v string) string {
	var probe map[string]any
	if toml.Unmarshal([]byte("v = "+v), &probe) == nil {
		return v
	}
	b, _ := toml.Marshal(map[string]string{"v": v})
	return strings.TrimSpace(strings.TrimPrefix(string(b), "v = "))
}

// edit replaces bytes [at, end) of the file with text (at == end inserts).
type edit struct {
	at, end int
	text    string
	flag    string
}

// overrideEdits turns overrides into text edits of data, whose scan is
// src; a bad override is added to l and skipped. Paths set by a flag are
// returned with it, for Source.Flags.
func overrideEdits(data []byte, src *tomlschema.Source, ovs []Override, l *problems) ([]edit, map[string]string) {
	last := map[string]int{} // a path given twice: the last flag wins
	paths := make([][]string, len(ovs))
	for i, ov := range ovs {
		parts, err := splitPath(ov.Path)
		if err == nil {
			err = checkOverridePath(parts, src)
		}
		if err != nil {
			l.flag(ov.Flag, err)
			continue
		}
		paths[i] = parts
		last[strings.Join(parts, ".")] = i
	}
	var edits []edit
	flags := map[string]string{}
	for i, ov := range ovs {
		key := strings.Join(paths[i], ".")
		if paths[i] == nil || last[key] != i {
			continue
		}
		e, err := placeOverride(data, src, paths[i], tomlValue(ov.Value))
		if err != nil {
			l.flag(ov.Flag, err)
			continue
		}
		e.flag = ov.Flag
		edits = append(edits, e)
		flags[key] = ov.Flag
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].at < edits[j].at })
	for i := 1; i < len(edits); i++ {
		if edits[i].at < edits[i-1].end {
			l.flag(edits[i].flag, fmt.Errorf("overlaps %s (one sets a table the other sets a key of); give one", edits[i-1].flag))
			edits = append(edits[:i], edits[i+1:]...)
			i--
		}
	}
	return edits, flags
}

// checkOverridePath: the key is in the schema (an env's args take any
// key), it is a value rather than a table, and every array block it names
// is in the file.
func checkOverridePath(parts []string, src *tomlschema.Source) error {
	bare := tomlschema.StripIndices(parts)
	t := schema.Type(bare)
	if t == nil {
		return fmt.Errorf("%s", unknownKeyMsg(bare))
	}
	if tomlschema.IsSection(t) {
		return fmt.Errorf("key %q is a table; set its keys one by one, e.g. --set %s.%s=...", tomlschema.DisplayKey(strings.Join(parts, ".")), strings.Join(parts, "."), firstKey(bare))
	}
	for i, p := range parts {
		if _, err := strconv.Atoi(p); err != nil || i == 0 {
			continue
		}
		if !src.Has(strings.Join(parts[:i+1], ".")) {
			arr := strings.Join(parts[:i], ".")
			n := 0
			for src.Has(arr + "." + strconv.Itoa(n)) {
				n++
			}
			return fmt.Errorf("key %q: the file has %d [[%s]] block(s); --set changes keys of the blocks it has, it cannot add one", tomlschema.DisplayKey(strings.Join(parts, ".")), n, strings.Join(tomlschema.StripIndices(parts[:i]), "."))
		}
	}
	return nil
}

func firstKey(table []string) string {
	if keys := schema.TableKeys(table); len(keys) > 0 {
		return keys[0]
	}
	return "key"
}

// placeOverride finds where the value goes: over the value the file
// writes, or as a new key in the deepest table the file writes on the way
// — after its [header] line, inside its { inline table }, or at the top of
// the file as a dotted key.
func placeOverride(data []byte, src *tomlschema.Source, parts []string, value string) (edit, error) {
	key := strings.Join(parts, ".")
	if v, ok := src.Values[key]; ok {
		return edit{at: v.Start, end: v.End, text: value}, nil
	}
	for k := len(parts) - 1; k >= 0; k-- {
		anc := strings.Join(parts[:k], ".")
		rest := strings.Join(quoteKeys(parts[k:]), ".")
		if k == 0 {
			return edit{text: rest + " = " + value + "\n"}, nil
		}
		if end, ok := src.HeaderEnd[anc]; ok {
			return edit{at: end, end: end, text: "\n" + rest + " = " + value}, nil
		}
		if v, ok := src.Values[anc]; ok {
			if !v.Inline {
				return edit{}, fmt.Errorf("key %q: the file sets %s to a value, not a table", tomlschema.DisplayKey(key), tomlschema.DisplayKey(anc))
			}
			sep := ","
			if strings.TrimSpace(string(data[v.Start+1:v.End-1])) == "" {
				sep = ""
			}
			return edit{at: v.Start + 1, end: v.Start + 1, text: " " + rest + " = " + value + sep}, nil
		}
	}
	return edit{}, fmt.Errorf("key %q: nowhere to put it", key)
}

// quoteKeys quotes key parts that TOML's bare keys cannot hold.
func quoteKeys(parts []string) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = p
		if strings.IndexFunc(p, func(r rune) bool {
			return !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
		}) >= 0 {
			out[i] = strconv.Quote(p)
		}
	}
	return out
}
