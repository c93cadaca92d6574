// Package rubric owns rewards: it turns a finished rollout (prompt, completion
// and reference answer, as text) into a reward in [0, 1] plus named
// sub-metrics. It holds the reward functions themselves (an exact port of
// Python's difflib ratio, exact, numeric and math-equivalence matchers, tag
// and format checks), the parsers that pull an answer out of a completion
// (XML tags, GSM8K's "####", \boxed{}, <think> stripping), the weighted
// combination with clamping, and adapters for reward functions that live
// outside the process: a command, an HTTP server, or an LLM judge. It never
// generates text and knows nothing of tokens; package env pairs a rubric with
// a dataset and a harness.
//
// # Parity with verifiers
//
// The parsers and rewards that Prime Intellect's Lab environments use
// follow verifiers at commit 8d4b33247 (2026-04-28): XMLTag is
// XMLParser.parse_answer's first tag of a message, XMLFormatReward its
// format reward, BoxedAnswer extract_boxed_answer(strict=True),
// MaybeThinkAnswer what MathRubric reads, and MathVerify MathRubric's
// math-verify 0.8.0 check (LaTeX normalisation, units, currency, percent,
// fractions, roots, π, tuples, intervals, sets, equations, and symbolic
// equality by exact rationals and seeded random evaluation). Golden files
// under testdata, and env's, hold values computed by that Python code
// itself; their scripts are in testdata/reference.
//
// # Writing a reward function in Go
//
// A reward function is a Func. Most need neither the context nor an error:
//
//	correct := rubric.Reward(func(r rubric.Rollout) float64 {
//		got, ok := rubric.MaybeThinkAnswer(r)
//		if ok && rubric.MathVerify(r.Answer, got) {
//			return 1
//		}
//		return 0
//	})
//	format, _ := rubric.FormatReward("answer")
//	rb, err := rubric.Weighted(
//		rubric.Term{Name: "correct", Weight: 0.9, Func: correct},
//		rubric.Term{Name: "format", Weight: 0.1, Func: format},
//	)
//	res := rb.Score(ctx, rollout) // res.Reward in [0, 1], res.Metrics
//
// A Func that fails returns an error; one that panics is recovered. Either
// way its term scores 0, the result's metrics get "errors/<name>" = 1 and
// Errors a one-line reason, and the run goes on. A weighted sum outside
// [0, 1] is clamped and counted as "warnings/clamped".
//
// # Writing a reward function in Python
//
// Command runs a program per rollout: the rollout arrives on stdin as one
// JSON object
//
//	{"prompt": [{"role": "user", "content": "..."}],
//	 "completion": [{"role": "assistant", "content": "..."}],
//	 "answer": "...", "info": {...}}
//
// and the program prints either a bare number or
// {"reward": 0.5, "metrics": {"name": 1.0}}. For example
// (rubric/examples/reward.py):
//
//	import json, sys
//	r = json.load(sys.stdin)
//	text = [m["content"] for m in r["completion"] if m["role"] == "assistant"][-1]
//	print(1.0 if r["answer"].strip() in text else 0.0)
//
// with CommandConfig{Argv: []string{"python3", "reward.py"}}. HTTP posts the
// same object to a server and reads the same reply from the response body,
// which avoids a Python start-up per rollout (rubric/examples/reward_server.py
// is a standard-library server). The program runs in its own session and,
// where the system allows, its own pid namespace: when it exits or times
// out, everything it started is killed, and a reply it printed is kept
// even if a background child still holds stdout. Crashes, non-zero exits,
// timeouts, oversized or malformed output all score 0 and are counted,
// with the program's last stderr line in the error.
//
// Judge asks an LLM behind an OpenAI-compatible /v1/chat/completions
// endpoint whether the response matches the answer.
package rubric
