// Package wikisearch is the wiki-search builtin: trivia questions answered
// with search tools over a wiki corpus, as verifiers' wiki_search. It
// registers itself with package env on init.
package wikisearch

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/grpo-dev/grpo/env"
	"github.com/grpo-dev/grpo/rubric"
)

// wiki-search has two behaviours (Spec.Versions). v1, the default, is
// verifiers a60a606's wiki_search taskset: the instructions and the
// question in one user message (no system message), the first 20
// questions, the tools wiki_search_pages / wiki_view_sections /
// wiki_read_section with FastMCP's replies (tools_v1.go), and the plugged
// reference judge, reward "wiki-search" (judge_v1.go). Its agent has no
// turn cap; grpo keeps max_turns (10 by default) because a slot's cache
// is sized for a number of turns, and with none an episode would be cut
// by the context after its first.
//
// v0 is verifiers 8d4b33247's environments/wiki_search: a ToolEnv whose
// model answers trivia questions with three tools over a Wikipedia corpus
// — search_pages (the 10 pages whose titles best match), view_sections (a
// page's '#' headings) and read_section — under the same system prompt,
// max_turns 10 and an LLM judge (verifiers' prompt; reward 1 on "yes").
//
// Departures of both, each because the reference needs the network:
//   - data: the Lab's HF datasets (willcb/rare-wiki-pages for pages,
//     willcb/wiki-trivia-questions-v4 for questions) only when
//     corpus_dataset / dataset_name name them; by default a small bundled
//     corpus and question set (env/wikisearch/wikidata), or corpus_dir / questions_path;
//   - ranking: title embeddings through an OpenAI-compatible embeddings
//     endpoint only when embed_base_url is set; otherwise BM25 over titles
//     and text, cached beside the corpus (bm25.go);
//   - judge: only when judge_base_url is set; otherwise exact_match, the
//     normalized reference answer found as whole words in the normalized
//     final answer (answerMatch).
//
// As in verifiers, both splits are the one question set.

//go:embed wikidata
var wikiData embed.FS

// wikiSystemPrompt is v0's system prompt.
const wikiSystemPrompt = "Use the provided Wikipedia search tools to help answer questions."

// wikiInstructionsV1 is v1's SYSTEM, which opens each question's user
// message ("{SYSTEM}\n\nQuestion: {question}").
const wikiInstructionsV1 = "Use the Wikipedia search tools \u2014 `wiki_search_pages` to find relevant pages, " +
	"`wiki_view_sections` to list a page's sections, and `wiki_read_section` to read " +
	"one \u2014 to answer the question. When confident, reply with a concise final answer."

// wikiQuestionsV1 is v1's NUM_QUESTIONS: the taskset loads the first 20.
const wikiQuestionsV1 = 20

// wikiJudgePrompt is v0's judge prompt: verifiers' JUDGE_PROMPT as Python evaluates it (the
// indentation of its source lines included).
const wikiJudgePrompt = "Given a ground truth answer     and a response, determine if the response is both correct and coherent.\n\n    Question:\n    ```\n    {question}\n    ```\n\n    Ground truth answer:\n    ```\n    {answer}\n    ```\n\n    Response:\n    ```\n    {response}\n    ```\n\n    Respond either \"yes\" or \"no\" only.\n    \n    If a response contains incoherent text, respond with \"no\" even if the correct answer is also present.\n    "

// wikiReplyTokens is the room a slot keeps for each turn's tool results: a
// search's ten titles, a page's sections, or a section of the Lab's
// corpus (longer ones end the episode as truncated by the context).
const wikiReplyTokens = env.ToolReplyTokens

func init() {
	env.MustRegister(env.Spec{
		ID: "wiki-search",
		Description: "trivia questions answered with search tools over a wiki corpus; v1 (default, verifiers a60a606): wiki_search_pages / wiki_view_sections / wiki_read_section, " +
			"reward = the judge's (wiki-search) with judge_base_url; v0 (verifiers 8d4b33247): search_pages / view_sections / read_section, judge_reward_func; " +
			"else exact_match; offline by default: bundled corpus, BM25 ranking",
		Versions: []env.Version{
			{Name: "v1", About: "verifiers a60a606 taskset"},
			{Name: "v0", Hub: []string{"0.1.23"}, About: "verifiers 8d4b33247"},
		},
		Args: []env.ArgSpec{
			{Name: "max_turns", Type: env.ArgInt, Default: 10, Help: "model turns per episode (v1's agent has no cap; a slot's cache is sized for this many)"},
			{Name: "system_prompt", Type: env.ArgString, Default: "", Help: `system message; "" = the version's (v1: none, the instructions open the question; v0: "` + wikiSystemPrompt + `")`},
			{Name: "judge_model", Type: env.ArgString, Default: "", Help: `judge model name; "" = the version's (v1: ` + wikiJudgeModelV1 + `, v0: gpt-4.1-mini)`},
			{Name: "judge_base_url", Type: env.ArgString, Default: "", Help: `OpenAI-compatible judge API root; "" = exact_match (verifiers: https://api.openai.com/v1)`},
			{Name: "judge_api_key_var", Type: env.ArgString, Default: "OPENAI_API_KEY", Help: "environment variable with the judge's API key"},
			{Name: "embed_model", Type: env.ArgString, Default: "text-embedding-3-small", Help: "embedding model name"},
			{Name: "embed_base_url", Type: env.ArgString, Default: "", Help: `OpenAI-compatible embeddings API root; "" = BM25 ranking (verifiers: https://api.openai.com/v1)`},
			{Name: "embed_api_key_var", Type: env.ArgString, Default: "OPENAI_API_KEY", Help: "environment variable with the embeddings API key"},
			{Name: "corpus_dir", Type: env.ArgString, Default: "", Help: `directory of NAME.md pages and/or .jsonl rows {id, title, content}; "" = bundled`},
			{Name: "corpus_dataset", Type: env.ArgString, Default: "", Help: "HF dataset of pages instead (the Lab's: willcb/rare-wiki-pages)"},
			{Name: "corpus_split", Type: env.ArgString, Default: "train", Help: "split of corpus_dataset"},
			{Name: "questions_path", Type: env.ArgString, Default: "", Help: `.jsonl[.gz] or .parquet of {question, answer}; "" = bundled`},
			{Name: "dataset_name", Type: env.ArgString, Default: "", Help: "HF dataset of questions instead (the Lab's: willcb/wiki-trivia-questions-v4)"},
			{Name: "dataset_split", Type: env.ArgString, Default: "train", Help: "split of dataset_name"},
			{Name: "num_train_examples", Type: env.ArgInt, Default: -1, Help: "first N questions for training (-1: all)"},
			{Name: "num_eval_examples", Type: env.ArgInt, Default: -1, Help: "first N questions for eval (-1: all)"},
		},
		New: newWikiSearch,
	})
}

type wikiSearch struct {
	args   env.Args
	v1     bool
	opts   env.Options
	corpus *wikiCorpus
	tools  []env.Tool
	rubric *rubric.Rubric

	once sync.Once
	exs  []env.Example
	err  error
}

func newWikiSearch(a env.Args, o env.Options) (env.Environment, error) {
	v1 := o.Version != "v0"
	a = maps.Clone(a)
	if a.Int("max_turns") < 1 {
		return nil, fmt.Errorf("max_turns = %d: want at least 1", a.Int("max_turns"))
	}
	if a.String("judge_model") == "" {
		a["judge_model"] = "gpt-4.1-mini"
		if v1 {
			a["judge_model"] = wikiJudgeModelV1
		}
	}
	if a.String("system_prompt") == "" && !v1 {
		a["system_prompt"] = wikiSystemPrompt
	}
	corpus, cacheDir, err := loadWikiSource(a, o)
	if err != nil {
		return nil, err
	}
	e := &wikiSearch{args: a, opts: o, corpus: corpus, v1: v1}
	var rank func(ctx context.Context, query string, k int) ([]int, error)
	if base := a.String("embed_base_url"); base != "" {
		emb, err := newTitleEmbedder(base, a.String("embed_model"), a.String("embed_api_key_var"), corpus, cacheDir)
		if err != nil {
			return nil, err
		}
		rank = emb.search
	} else {
		ix := loadBM25(corpus, cacheDir) // built (or read) once, now
		rank = func(_ context.Context, q string, k int) ([]int, error) { return ix.search(q, k), nil }
	}
	if v1 {
		e.tools = wikiToolsV1(corpus, rank)
	} else {
		e.tools = wikiTools(corpus, rank)
	}
	if e.rubric, err = wikiRubric(a, v1); err != nil {
		return nil, err
	}
	return e, nil
}

// loadWikiSource reads the corpus the args name and says where its index
// caches go: a .grpo-index directory inside corpus_dir, the user cache
// for a hub corpus, nowhere for the bundled one (built in milliseconds).
func loadWikiSource(a env.Args, o env.Options) (*wikiCorpus, string, error) {
	switch dir, hub := a.String("corpus_dir"), a.String("corpus_dataset"); {
	case dir != "" && hub != "":
		return nil, "", fmt.Errorf("corpus_dir and corpus_dataset both set; give one")
	case dir != "":
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil, "", fmt.Errorf("corpus_dir %q is not a directory", dir)
		}
		c, err := loadWikiCorpus(os.DirFS(dir))
		if err != nil {
			return nil, "", fmt.Errorf("corpus_dir %s: %v", dir, err)
		}
		return c, filepath.Join(dir, ".grpo-index"), nil
	case hub != "":
		rows, err := env.LoadHubRows(context.Background(), o.Hub, hub, "", a.String("corpus_split"))
		if err != nil {
			return nil, "", err
		}
		pages, err := wikiRowsOf(rows)
		if err != nil {
			return nil, "", fmt.Errorf("corpus_dataset %s: %v", hub, err)
		}
		c, err := newWikiCorpus(pages)
		if err != nil {
			return nil, "", fmt.Errorf("corpus_dataset %s: %v", hub, err)
		}
		cache := ""
		if d, err := os.UserCacheDir(); err == nil {
			cache = filepath.Join(d, "grpo", "wiki-search")
		}
		return c, cache, nil
	}
	sub, _ := fs.Sub(wikiData, "wikidata/pages")
	c, err := loadWikiCorpus(sub)
	return c, "", err
}

func wikiRubric(a env.Args, v1 bool) (*rubric.Rubric, error) {
	if base := a.String("judge_base_url"); base != "" && v1 {
		return rubric.Weighted(rubric.Term{Name: wikiJudgeMetricV1, Weight: 1, Func: judgeV1(base, a.String("judge_model"), a.String("judge_api_key_var"))})
	} else if base != "" {
		judge, err := rubric.Judge(rubric.JudgeConfig{BaseURL: base, Model: a.String("judge_model"),
			APIKeyEnv: a.String("judge_api_key_var"), Template: wikiJudgePrompt})
		if err != nil {
			return nil, err
		}
		return rubric.Weighted(rubric.Term{Name: "judge_reward_func", Weight: 1, Func: judge})
	}
	return rubric.Weighted(rubric.Term{Name: "exact_match", Weight: 1, Func: rubric.Reward(func(r rubric.Rollout) float64 {
		if answerMatch(rubric.StripThink(r.LastAssistant()), r.Answer) {
			return 1
		}
		return 0
	})})
}

// answerMatch: the reference, normalized as SQuAD's exact match
// normalizes (lower case, no punctuation or articles, single spaces),
// appears as whole words in the normalized response — the offline
// stand-in for the judge, which reads a sentence around the answer too.
func answerMatch(response, answer string) bool {
	a := normalizeAnswer(answer)
	return a != "" && strings.Contains(" "+normalizeAnswer(response)+" ", " "+a+" ")
}

func normalizeAnswer(s string) string {
	var words []string
	for _, w := range bm25Terms(s) {
		if w != "a" && w != "an" && w != "the" {
			words = append(words, w)
		}
	}
	return strings.Join(words, " ")
}

func (e *wikiSearch) ID() string                         { return "wiki-search" }
func (e *wikiSearch) Tools() []env.Tool                  { return e.tools }
func (e *wikiSearch) MaxTurns() int                      { return e.args.Int("max_turns") }
func (e *wikiSearch) ReplyTokens() int                   { return wikiReplyTokens }
func (e *wikiSearch) Rubric() *rubric.Rubric             { return e.rubric }
func (e *wikiSearch) NewEpisode(env.Example) env.Episode { return env.SingleTurnEpisode{} }

func (e *wikiSearch) Examples(split string) ([]env.Example, error) {
	var n int
	switch split {
	case "train":
		n = e.args.Int("num_train_examples")
	case "eval":
		n = e.args.Int("num_eval_examples")
	default:
		return nil, env.SplitErr(e.ID(), split)
	}
	e.once.Do(func() { e.exs, e.err = e.questions() })
	if e.err != nil {
		return nil, e.err
	}
	return env.Limit(e.exs, n), nil
}

func (e *wikiSearch) questions() ([]env.Example, error) {
	var rows []env.Row
	var err error
	switch p, hub := e.args.String("questions_path"), e.args.String("dataset_name"); {
	case p != "" && hub != "":
		return nil, fmt.Errorf("env wiki-search: questions_path and dataset_name both set; give one")
	case p != "":
		rows, err = env.LoadRows(p)
	case hub != "":
		rows, err = env.LoadHubRows(context.Background(), e.opts.Hub, hub, "", e.args.String("dataset_split"))
	default:
		var data []byte
		if data, err = wikiData.ReadFile("wikidata/questions.jsonl"); err == nil {
			rows, err = bundledRows("wikidata/questions.jsonl", data)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("env wiki-search: %w", err)
	}
	exs, err := env.QAExamples(rows, env.QAFields{Question: "question", Answer: "answer"}, e.args.String("system_prompt"), nil)
	if err != nil || !e.v1 {
		return exs, err
	}
	// v1: the first 20 questions, the instructions before each, and the
	// bare question kept for the judge's {question}.
	exs = env.Limit(exs, wikiQuestionsV1)
	for i := range exs {
		user := &exs[i].Prompt[len(exs[i].Prompt)-1]
		exs[i].Info = map[string]any{"question": user.Content}
		user.Content = wikiInstructionsV1 + "\n\nQuestion: " + user.Content
	}
	return exs, nil
}

// bundledRows reads an embedded JSONL file (LoadJSONL reads from disk).
func bundledRows(name string, data []byte) ([]env.Row, error) {
	var rows []env.Row
	for i, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber() // as LoadJSONL reads numbers
		var fields map[string]any
		if err := dec.Decode(&fields); err != nil {
			return nil, fmt.Errorf("%s:%d: %v (a bug in the bundled data)", name, i+1, err)
		}
		rows = append(rows, env.Row{Where: fmt.Sprintf("%s:%d", name, i+1), Fields: fields})
	}
	return rows, nil
}
