package config

import (
	"fmt"
	"os"
	"strings"

	"github.com/grpo-dev/grpo/internal/tomlschema"
	"github.com/pelletier/go-toml/v2"
)

// Load reads, parses and validates the run config at path. See
// Parse.
func Load(path string) (*Config, error) {
	return LoadWith(path, ParseOptions{})
}

// LoadWith is Load with overrides and an env check; see ParseWith.
func LoadWith(path string, o ParseOptions) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	return ParseWith(data, path, o)
}

// ParseOptions are what ParseWith adds to Parse.
type ParseOptions struct {
	// Overrides are laid over the file, in order (the last of two for one
	// key wins).
	Overrides []Override
	// Envs, when set, checks every env id and its args (env.Check),
	// together with the rest of the values.
	Envs EnvChecker
}

// Parse parses and validates a run config; name (usually the file path)
// prefixes error messages. Keys the file leaves out keep DefaultConfig's
// values. The error is Problems: one line per problem, in file order,
// each "name:line:col: key ...: problem; fix". Unknown keys are errors
// (with a did-you-mean); Lab keys that only matter on Prime's hosted
// service are accepted and listed in Config.Warnings. Env ids and args are
// not checked here: use ParseWith with Envs, or call ValidateEnvs.
func Parse(data []byte, name string) (*Config, error) {
	return ParseWith(data, name, ParseOptions{})
}

// ParseWith is Parse with command-line overrides written into the file
// (Config.Text is the result) and, with o.Envs, the env check.
//
// Problems are found in stages, each reporting all of its own: TOML
// syntax (the first error only: the rest of the file cannot be read);
// the file's shape ([env] for [[env]], [teacher], betas); unknown keys and
// wrong types; then values, relations and env ids together. A stage with
// problems ends the parse, because later stages would report its
// problems again in other words (a mistyped key is also missing).
func ParseWith(data []byte, name string, o ParseOptions) (*Config, error) {
	// A loose decode first: it reports syntax errors, and the raw values
	// tell apart what the typed decode cannot (loss = "rl" vs [loss]).
	var raw map[string]any
	if err := toml.Unmarshal(data, &raw); err != nil {
		if e, ok := nonASCIIKeyError(name, data, err); ok {
			return nil, e
		}
		return nil, decodeError(name, err, nil)
	}
	l := &problems{src: tomlschema.Scan(name, data)}
	edits, flags := overrideEdits(data, l.src, o.Overrides, l)
	text, pm := applyEdits(name, data, edits)
	if err := l.err(); err != nil {
		return nil, err
	}
	if len(edits) > 0 {
		raw = nil
		if err := toml.Unmarshal(text, &raw); err != nil {
			return nil, Problems{decodeProblem(pm, err, nil)}
		}
	}
	// Positions in the scan are the file's from here on; byte offsets
	// (Values, KV) stay the edited text's, which is what is decoded.
	src := tomlschema.Scan(name, text)
	pm.remap(src, flags)
	l.src = src
	if checkTables(l, raw); len(l.list) > 0 {
		return nil, l.err()
	}
	cfg := DefaultConfig()
	decodeAll(l, pm, takeLossMode(l, raw, text, &cfg), raw, &cfg)
	if len(l.list) > 0 {
		return nil, l.err()
	}
	cfg.src, cfg.text = src, text
	cfg.resolveLab(l)
	cfg.check(l)
	cfg.checkEnvIDs(l, o.Envs)
	if err := l.err(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// Text is the config's TOML as it ran: the file's text with the
// command-line overrides written in (nil for a config built in Go).
func (c *Config) Text() []byte { return c.text }

// checkTables catches what TOML allows but the schema does not: [env]
// written as a single table (go-toml would quietly decode it as a
// one-element array), teacher without SFT, and optimizer betas of the
// wrong length (a [2]float64 takes the first two of any array).
func checkTables(l *problems, raw map[string]any) {
	arrays := map[string]bool{}
	for _, h := range l.src.Headers {
		if h.Array {
			arrays[strings.Join(h.Path, ".")] = true
			continue
		}
		for _, p := range []string{"env", "eval.env"} {
			n := len(strings.Split(p, "."))
			if len(h.Path) >= n && strings.Join(h.Path[:n], ".") == p && !arrays[p] {
				l.list = append(l.list, Problem{Line: h.At.Line, Col: h.At.Column,
					Msg: fmt.Sprintf("%s:%d:%d: %s", l.src.Name, h.At.Line, h.At.Column, singleBracketMsg(p))})
				arrays[p] = true // once per array
			}
		}
	}
	if _, ok := raw["teacher"]; ok {
		l.at(`key "teacher": a teacher model is only used with loss = "sft", which grpo does not run; remove [teacher]`, "teacher")
	}
	if opt, ok := raw["optimizer"].(map[string]any); ok {
		if b, ok := opt["betas"].([]any); ok && len(b) != 2 {
			l.at(fmt.Sprintf(`key "optimizer.betas": %d values; write exactly two, e.g. betas = [0.9, 0.999]`, len(b)), "optimizer.betas")
		}
	}
}

func singleBracketMsg(p string) string {
	return fmt.Sprintf("key %q: `[%s]` must be written `[[%s]]` (an array of tables: one block per environment)", p, p, p)
}

// takeLossMode handles Lab's top-level loss = "rl", which shares its name
// with grpo's [loss] table: it records the string and blanks the line
// (spaces keep every other position) so the typed decode sees [loss] only.
// Another mode is a problem; its line is blanked too, so the decode goes
// on to find the file's other problems.
func takeLossMode(l *problems, raw map[string]any, data []byte, cfg *Config) []byte {
	mode, ok := raw["loss"].(string)
	if !ok {
		return data
	}
	if mode != "rl" {
		l.at(fmt.Sprintf(`key "loss": loss = %q is not supported: grpo trains with RL only; set loss = "rl" or remove the key (grpo's loss settings live in the [loss] table)`, mode), "loss")
	}
	cfg.LossMode = mode
	r := l.src.KV["loss"]
	return blank(data, int(r.Offset), int(r.Offset+r.Length))
}

// blank returns data with bytes [from, to) turned to spaces, newlines
// kept, so every other position stays where it was.
func blank(data []byte, from, to int) []byte {
	out := append([]byte(nil), data...)
	for i := from; i < to; i++ {
		if out[i] != '\n' {
			out[i] = ' '
		}
	}
	return out
}

// decodeError turns a syntax error into the one line naming where and the
// fix.
func decodeError(name string, err error, raw map[string]any) error {
	return Problems{decodeProblem(&posMap{name: name}, err, raw)}
}
