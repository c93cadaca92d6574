package wikisearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/grpo-dev/grpo/env/internal/httpjson"
	"github.com/grpo-dev/grpo/rubric"
)

// v1's judge: verifiers a60a606's WikiSearchJudge, a ReferenceJudge with
// the environment's prompt (judge_prompt.txt), plugged under the reward
// name "wiki-search" with weight 1. It grades the last reply (the last
// assistant message, stripped, thinking included as the model wrote it),
// scores an empty one 0 without asking, sends the filled prompt as one
// user message with no sampling settings, and reads the verdict as
// parse_judge_choice does (judgeChoiceV1). A reply with no verdict is an
// error, as there, so a judge failure is never scored against the model.

// wikiJudgeMetricV1 is judge_key(WikiSearchJudgeConfig()): its id.
const wikiJudgeMetricV1 = "wiki-search"

// wikiJudgeModelV1 is JudgeConfig's default model at a60a606.
const wikiJudgeModelV1 = "openai/gpt-5.4-nano"

// wikiJudgePromptV1 is environments/wiki_search/wiki_search/judge_prompt.txt
// as read_text() gives it (its final newline included).
const wikiJudgePromptV1 = "Given a ground truth answer and a response, determine if the response is both correct and coherent.\n\n" +
	"Question:\n```\n{question}\n```\n\nGround truth answer:\n```\n{answer}\n```\n\nResponse:\n```\n{response}\n```\n\n" +
	"Respond either \"yes\" or \"no\" only. If a response contains incoherent text, respond with \"no\" even if the correct answer is also present.\n"

// judgeV1 asks the endpoint at baseURL (OpenAI-compatible).
func judgeV1(baseURL, model, apiKeyVar string) rubric.Func {
	url := strings.TrimRight(baseURL, "/") + "/chat/completions"
	return func(ctx context.Context, r rubric.Rollout) (rubric.Score, error) {
		response := rubric.PyStrip(r.LastAssistant())
		if response == "" {
			return rubric.Score{Value: 0}, nil // nothing to grade: no call
		}
		headers := map[string]string{}
		if key := os.Getenv(apiKeyVar); apiKeyVar != "" && key != "" {
			headers["Authorization"] = "Bearer " + key
		}
		payload, _ := json.Marshal(map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": judgePromptV1(r, response)}}})
		body, err := httpjson.Post(ctx, http.DefaultClient, url, headers, payload, 120*time.Second, 16<<20)
		if err != nil {
			return rubric.Score{}, fmt.Errorf("judge: %v", err)
		}
		var resp struct {
			Choices []struct {
				Message struct {
					Content *string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(body, &resp); err != nil || len(resp.Choices) == 0 {
			return rubric.Score{}, fmt.Errorf("judge: %s: reply %s is not a chat completion with choices", url, httpjson.Preview(body))
		}
		text := ""
		if c := resp.Choices[0].Message.Content; c != nil {
			text = *c
		}
		verdict, ok := judgeChoiceV1(text, "yes", "no")
		if !ok {
			return rubric.Score{}, fmt.Errorf("judge returned no yes/no verdict: %q", text)
		}
		if verdict == "yes" {
			return rubric.Score{Value: 1}, nil
		}
		return rubric.Score{Value: 0}, nil
	}
}

// judgePromptV1 fills the template in one pass (Judge.build_messages):
// {question} is the task's question field (info "question"; the user
// turn when a row has none), {answer} the reference, {response} the
// stripped last reply; {positive}/{negative} are the choices.
func judgePromptV1(r rubric.Rollout, response string) string {
	question, ok := r.Info["question"].(string)
	if !ok {
		question = r.Question()
		if _, q, cut := strings.Cut(question, "\n\nQuestion: "); cut {
			question = q
		}
	}
	return strings.NewReplacer("{question}", question, "{answer}", r.Answer, "{response}", response,
		"{positive}", "yes", "{negative}", "no").Replace(wikiJudgePromptV1)
}

// pySpace is Python's \s in a str pattern (str.isspace), for Go's regexp,
// whose \s is ASCII only.
const pySpace = `[\t\n\x0b\x0c\r\x1c-\x1f \x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

// verdictLine is parse_judge_choice's verdict_re: at the start or after a
// newline, a FINAL JUDGMENT / FINAL ANSWER / FINAL VERDICT / JUDGMENT /
// VERDICT / ANSWER label, optionally "IS", ":" or "-".
var verdictLine = regexp.MustCompile(strings.ReplaceAll(`(?:^|\n)\s*(?:FINAL\s+JUDGMENT|FINAL\s+ANSWER|FINAL\s+VERDICT|JUDGMENT|VERDICT|ANSWER)\s*(?:IS\s*)?[:\-]?\s*`, `\s`, pySpace))

// judgeChoiceV1 is verifiers' parse_judge_choice for case-insensitive
// choices: nothing for an empty reply or an unclosed <think>; else the
// text after the last </think>, stripped, or the last \boxed{} in it;
// then the first standalone choice after a verdict line if there is one
// (none if that line names none), else the last standalone choice. Upper
// casing is Go's (Python's differs only for a few letters, such as ß).
func judgeChoiceV1(content string, choices ...string) (string, bool) {
	if content == "" || (strings.Contains(content, "<think>") && !strings.Contains(content, "</think>")) {
		return "", false
	}
	if i := strings.LastIndex(content, "</think>"); i >= 0 {
		content = content[i+len("</think>"):]
	}
	text := rubric.PyStrip(content)
	if boxed := rubric.PyStrip(lastBoxedStrict(text)); boxed != "" {
		text = boxed
	}
	upper := strings.ToUpper(text)
	if loc := verdictLine.FindStringIndex(upper); loc != nil {
		all := standaloneChoices(upper[loc[1]:], choices)
		if len(all) == 0 {
			return "", false
		}
		return all[0], true
	}
	all := standaloneChoices(upper, choices)
	if len(all) == 0 {
		return "", false
	}
	return all[len(all)-1], true
}

// lastBoxedStrict is extract_boxed_answer(text, strict=True): the inside
// of the last \boxed{...}, braces balanced, or "" when there is none or it
// is unclosed.
func lastBoxedStrict(text string) string {
	start := strings.LastIndex(text, `\boxed{`)
	if start < 0 {
		return ""
	}
	inner := start + len(`\boxed{`)
	depth := 1
	for i := inner; i < len(text); i++ {
		switch text[i] {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth == 0 {
			return text[inner:i]
		}
	}
	return ""
}

// standaloneChoices are re.findall(r"(?<!\w)(C1|C2)(?!\w)", upper) mapped
// back to the choices as given: Python's \w is a letter, a number or '_'.
func standaloneChoices(upper string, choices []string) []string {
	word := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }
	var out []string
	prev := rune(-1)
	for i := 0; i < len(upper); {
		matched := false
		if prev < 0 || !word(prev) {
			for _, c := range choices {
				u := strings.ToUpper(c)
				if !strings.HasPrefix(upper[i:], u) {
					continue
				}
				if next, n := utf8.DecodeRuneInString(upper[i+len(u):]); n > 0 && word(next) {
					continue
				}
				out = append(out, c)
				i += len(u)
				prev, _ = utf8.DecodeLastRuneInString(u)
				matched = true
				break
			}
		}
		if !matched {
			r, n := utf8.DecodeRuneInString(upper[i:])
			prev, i = r, i+n
		}
	}
	return out
}
