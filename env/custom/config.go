package custom

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/grpo-dev/grpo/env"
	"github.com/pelletier/go-toml/v2"
)

// ConfigFile is the file that makes a directory an environment.
const ConfigFile = "environment.toml"

// customConfig is the schema of environment.toml. Every key is checked:
// an unknown one is an error with its line, so a typo never silently
// falls back to a default.
type customConfig struct {
	ID             string        `toml:"id"`
	Description    string        `toml:"description"`
	SystemPrompt   string        `toml:"system_prompt"`
	PromptTemplate string        `toml:"prompt_template"`
	Parser         string        `toml:"parser"`
	Dataset        datasetConfig `toml:"dataset"`
	Rubric         []termConfig  `toml:"rubric"`
	// MaxTurns and Tool make the environment multi-turn: the model may call
	// the tools, and an episode ends at a turn without a call or after
	// max_turns turns (tools.go).
	MaxTurns int          `toml:"max_turns"`
	Tool     []toolConfig `toml:"tool"`
	// Agent makes an external agent program play the episodes (agent.go).
	Agent *agentConfig `toml:"agent"`
}

// datasetConfig says where the rows come from: local files (paths relative
// to the environment's directory) or a Hugging Face dataset.
type datasetConfig struct {
	Train         string `toml:"train"`
	Eval          string `toml:"eval"`
	Format        string `toml:"format"`
	Hub           string `toml:"hub"`
	Config        string `toml:"config"`
	TrainSplit    string `toml:"train_split"`
	EvalSplit     string `toml:"eval_split"`
	QuestionField string `toml:"question_field"`
	AnswerField   string `toml:"answer_field"`
}

// termConfig is one [[rubric]] table; which keys apply depends on type.
type termConfig struct {
	Type      string            `toml:"type"`
	Name      string            `toml:"name"`
	Weight    *float64          `toml:"weight"`
	Tags      []string          `toml:"tags"`
	Argv      []string          `toml:"argv"`
	Timeout   string            `toml:"timeout"`
	URL       string            `toml:"url"`
	Headers   map[string]string `toml:"headers"`
	BaseURL   string            `toml:"base_url"`
	Model     string            `toml:"model"`
	APIKeyEnv string            `toml:"api_key_env"`
	Template  string            `toml:"template"`
	MaxTokens int               `toml:"max_tokens"`
	// Endpoint names a judge by its endpoint_id in endpoints.toml (found
	// at EndpointsPath, relative to the environment's directory, or else
	// configs/endpoints.toml of the working directory).
	Endpoint      string `toml:"endpoint"`
	EndpointsPath string `toml:"endpoints_path"`
}

// readCustomConfig parses dir/environment.toml strictly and fills in
// defaults. Syntax errors, unknown keys and wrong types come back as
// "path:line:col: problem"; semantic errors as "path:line: problem".
func readCustomConfig(dir string) (*customConfig, error) {
	path := filepath.Join(dir, ConfigFile)
	src, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: no %s there; an environment directory needs one (see `grpo env --help`)", dir, ConfigFile)
		}
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return parseCustomConfig(path, src)
}

// parseCustomConfig is readCustomConfig on the file's bytes; path labels
// errors.
func parseCustomConfig(path string, src []byte) (*customConfig, error) {
	var c customConfig
	dec := toml.NewDecoder(bytes.NewReader(src))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, tomlError(path, err)
	}
	cf := &configFile{path: path, src: string(src)}
	if err := c.check(cf); err != nil {
		return nil, err
	}
	return &c, nil
}

// tomlError turns go-toml's errors into file:line:col messages.
func tomlError(path string, err error) error {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) && len(strict.Errors) > 0 {
		var msgs []string
		for _, e := range strict.Errors {
			row, col := e.Position()
			msgs = append(msgs, fmt.Sprintf("%s:%d:%d: unknown key %q; valid keys are listed in `grpo help env`",
				path, row, col, strings.Join(e.Key(), ".")))
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, col := de.Position()
		key := ""
		if k := de.Key(); len(k) > 0 {
			key = fmt.Sprintf(" (key %s)", strings.Join(k, "."))
		}
		return fmt.Errorf("%s:%d:%d: %s%s", path, row, col, de.Error(), key)
	}
	return fmt.Errorf("%s: %v", path, err)
}

// configFile finds the line of a key for errors found after decoding.
type configFile struct {
	path, src string
}

// at returns "path:line" for the first `key =` line, searching from the
// start of the n-th (0-based) [[rubric]] table when n >= 0.
func (f *configFile) at(key string, n int) string {
	return f.atTable("rubric", key, n)
}

// atTable is at for the n-th [[table]].
func (f *configFile) atTable(table, key string, n int) string {
	lines := strings.Split(f.src, "\n")
	start := 0
	if n >= 0 {
		seen := -1
		for i, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), "[["+table+"]]") {
				seen++
				if seen == n {
					start = i
					break
				}
			}
		}
	}
	re := regexp.MustCompile(`^\s*` + regexp.QuoteMeta(key) + `\s*=`)
	for i := start; i < len(lines); i++ {
		if re.MatchString(lines[i]) {
			return fmt.Sprintf("%s:%d", f.path, i+1)
		}
	}
	if n >= 0 && start > 0 {
		return fmt.Sprintf("%s:%d", f.path, start+1)
	}
	return f.path
}

var parserRe = regexp.MustCompile(`^(xml:[A-Za-z_][A-Za-z0-9_.-]*|boxed|hash|think|none)$`)

// check validates what decoding cannot and fills defaults.
func (c *customConfig) check(f *configFile) error {
	if c.ID == "" {
		return fmt.Errorf("%s: id is missing; add e.g. id = \"my-org/my-env\"", f.path)
	}
	if !env.ValidID(c.ID) {
		return fmt.Errorf("%s: id %q is not valid; use letters, digits, '-', '_', '.', optionally owner/name", f.at("id", -1), c.ID)
	}
	if c.Parser == "" {
		c.Parser = "none"
	}
	if !parserRe.MatchString(c.Parser) {
		return fmt.Errorf("%s: parser %q is unknown; use \"xml:TAG\" (e.g. \"xml:answer\"), \"boxed\", \"hash\", \"think\" or \"none\"", f.at("parser", -1), c.Parser)
	}
	if c.PromptTemplate == "" {
		c.PromptTemplate = "{question}"
	}
	if _, err := parseTemplate(c.PromptTemplate); err != nil {
		return fmt.Errorf("%s: prompt_template: %v", f.at("prompt_template", -1), err)
	}
	d := &c.Dataset
	switch {
	case d.Hub == "" && d.Train == "":
		return fmt.Errorf("%s: [dataset] needs train = \"file.jsonl\" (a path relative to the environment directory) or hub = \"org/name\"", f.path)
	case d.Hub != "" && (d.Train != "" || d.Eval != ""):
		return fmt.Errorf("%s: [dataset] has both hub and train/eval files; keep one source", f.at("hub", -1))
	}
	for _, p := range []struct{ key, val string }{{"train", d.Train}, {"eval", d.Eval}} {
		if p.val != "" && (filepath.IsAbs(p.val) || !filepath.IsLocal(filepath.FromSlash(p.val))) {
			return fmt.Errorf("%s: [dataset] %s = %q must be a path inside the environment directory, so that `grpo env install` copies it", f.at(p.key, -1), p.key, p.val)
		}
	}
	if d.Format != "" && d.Format != "jsonl" && d.Format != "parquet" {
		return fmt.Errorf("%s: [dataset] format %q is unknown; use \"jsonl\" or \"parquet\" (or leave it out to go by the file extension)", f.at("format", -1), d.Format)
	}
	if d.TrainSplit == "" {
		d.TrainSplit = "train"
	}
	if d.EvalSplit == "" {
		d.EvalSplit = "test"
	}
	if d.QuestionField == "" {
		d.QuestionField = "question"
	}
	if d.AnswerField == "" {
		d.AnswerField = "answer"
	}
	if len(c.Rubric) == 0 {
		return fmt.Errorf("%s: no [[rubric]] terms; add at least one, e.g.\n[[rubric]]\ntype = \"exact\"\nweight = 1.0", f.path)
	}
	if allZeroWeights(c.Rubric) {
		// Each zero weight is allowed (a logged-only term); all of them
		// make every reward 0, which trains on nothing.
		return fmt.Errorf("%s: every [[rubric]] term has weight = 0, so every reward would be 0 and training would learn nothing; give at least one term a positive weight, e.g. weight = 1.0", f.at("weight", 0))
	}
	if err := c.checkTools(f); err != nil {
		return err
	}
	return c.checkAgent(f)
}

// allZeroWeights is true when every rubric term's weight is given as 0
// (an unset weight is 1).
func allZeroWeights(terms []termConfig) bool {
	for _, t := range terms {
		if t.Weight == nil || *t.Weight != 0 {
			return false
		}
	}
	return true
}
