// Writes testdata/tokenizer/corpus.jsonl (one JSON string per line) and
// testdata/tokenizer/chat-qwen3.json (conversations with their Qwen3
// renderings). Deterministic: a seeded generator, no clock.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { Template } from "@huggingface/jinja";
import { testdata, readJSON } from "./variants.mjs";

let seed = 0x2545f491;
function rand() { // xorshift32
  seed ^= seed << 13; seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5; seed >>>= 0;
  return seed / 4294967296;
}
const pick = (a) => a[Math.floor(rand() * a.length)];

const corpus = [];
const add = (s) => corpus.push(s);

// English, from GSM8K (MIT, see testdata/tokenizer/gsm8k/LICENSE).
const gsm = zlib.gunzipSync(fs.readFileSync(path.join(testdata, "gsm8k/train-head.jsonl.gz")))
  .toString("utf8").trim().split("\n").map((l) => JSON.parse(l));
for (const ex of gsm.slice(0, 60)) { add(ex.question); add(ex.answer); }

// Hand-picked cases, one concern each.
[
  "", " ", "a", "Hello world", "Hello, world!", "  leading spaces", "trailing spaces   ",
  "I'm here. You're there. They've gone. We'll see. He'd know. It's ok. Don't.",
  "I'M LOUD. YOU'RE LOUD. THEY'VE. WE'LL. HE'D. IT'S. DON'T. 'S 'T 'RE",
  "it'ſ", "rock'n'roll", "'''quoted'''", "''", "'", "x'", "l'l 'll 'LL 'Ll",
  "12345", "3.14159", "1,000,000", "-42", "1e-9", "0x1F", "٣٤٥ (Arabic-Indic digits)", "½ ¾ ² ³ Ⅻ ⑩",
  "2024-06-01T12:34:56Z", "$1,234.56", "#### 72", "<<48/2=24>>24",
  "tab\there", "two\t\ttabs", "new\nline", "crlf\r\nline", "cr\ronly", "\n\n\n", "\r\n\r\n", " \n \n ",
  "a  b", "a   b", "a    \n    b", "a \t\n b", "end with newline\n", "   ", "\t", "\u00a0nbsp\u00a0\u00a0x",
  "ideographic\u3000space\u3000\u3000x", "nel\u0085x", "a\u0085 b", "a \u0085b", "a\u0085\u0085b",
  "bom\ufeffx", "a\ufeff\ufeffb", "a \ufeff b", "line\u2028sep\u2029para", "mongolian\u180e\u180ex",
  "zero\u200bwidth\u200cjoin\u200d", "en\u2002em\u2003thin\u2009", "x\u000b\u000cy",
  "你好，世界！", "我爱自然语言处理。今天天气很好。", "日本語のテキストです。カタカナとひらがな。",
  "한국어 텍스트입니다.", "Привет, как дела?", "Γειά σου Κόσμε", "مرحبا بالعالم", "שלום עולם",
  "नमस्ते दुनिया", "สวัสดีชาวโลก", "Tiếng Việt có dấu", "Ünïcödé àccénts", "ﬁ ﬂ ligatures",
  "🎉", "👍🏽", "👨‍👩‍👧‍👦 family", "🇺🇸🇯🇵 flags", "emoji 😀😃😄 run", "✓ ✗ → ← ⇒ ∀ ∃ ∑ ∫",
  "mixed: English, 中文, русский, العربية, 😀, 123", "caf\u0065\u0301 (NFD e + acute)", "\u212b angstrom",
  "e\u0301\u0301 double", "\u1100\u1161 jamo", "Å vs A\u030a", "\u0301 leading combining mark",
  "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n", "text<|endoftext|>more",
  "<|im_end|><|im_end|>", "<|im_end", "|im_end|>", "<<|im_end|>>", "<think>\nreasoning\n</think>\n\nanswer",
  "<tool_call>\n{\"name\": \"f\"}\n</tool_call>", "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
  "<|vision_start|><|image_pad|><|vision_end|>", "a<|fim_prefix|>b<|fim_middle|>c<|fim_suffix|>",
  "    def f(x):\n        return x * 2\n", "if (a && b || !c) { return; }", "x += 1; y -= 2; z **= 3",
  "https://example.com/path?q=1&r=two#frag", "user@example.com", "C:\\Users\\name\\file.txt",
  "((((nested))))", "[1, 2, 3]", "{\"key\": \"value\", \"n\": 42}", "a_b_c", "CamelCaseIdentifier", "snake_case_name",
  "!!!???...", "---", "===", "***bold***", "~~strike~~", "`code`", "```go\nfunc main() {}\n```",
  "x\u0000y null byte", "\u0007bell\u001bescape", "\ud7ff\ue000\uffff", "𝐀𝐁𝐂 math bold", "𠀀𠀁 ext-B",
].forEach(add);

// Code.
[
  `package main

import "fmt"

func main() {
	for i := 0; i < 10; i++ {
		fmt.Printf("%d: %s\\n", i, "hello")
	}
}
`,
  `def fib(n: int) -> int:
    """Return the n-th Fibonacci number."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


if __name__ == "__main__":
    print([fib(i) for i in range(20)])
`,
  `const xs = [1, 2, 3].map((x) => x ** 2).filter(Boolean);
// comment with 'quotes' and "double quotes"
export default async function run({ a = 1, ...rest } = {}) { return { a, rest }; }
`,
  `SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%son' ORDER BY id DESC LIMIT 10;`,
  `#include <stdio.h>\nint main(void) {\n\tprintf("%s\\n", "hi");\n\treturn 0;\n}\n`,
  `<div class="a b" data-x='1'>&nbsp;&lt;tag&gt;</div>`,
  `$ grep -rn "TODO" . | awk -F: '{print $1}' | sort | uniq -c | sort -rn | head`,
].forEach(add);

// Random strings over a pool with the characters that decide splits.
const pool = [
  ..."abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", ..."0123456789", ..."'''\"", ..." .,;:!?-_()[]{}<>/\\@#$%^&*+=|~`",
  " ", " ", " ", "  ", "\t", "\n", "\n", "\r", "\r\n", "\u00a0", "\u3000", "\u0085", "\u2028", "\ufeff", "\u200b",
  ..."éüßçñøåæœ", "e\u0301", "A\u030a", ..."你好世界中文字", ..."日本語カタ", ..."한국어", ..."абвгдЖЗИ", ..."αβγΩ", ..."مرحبا", ..."नमस्ते",
  ..."٣٤½²Ⅻ", "😀", "👍🏽", "🇺🇸", "👨‍👩‍👧", "✓", "→", "𝐀", "𠀀",
  "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'LL", " the", " and", "ing", "tion",
  "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<|begin_of_text|>", "<|eot_id|>", "<|im_", "|>",
];
for (let i = 0; i < 250; i++) {
  const n = 1 + Math.floor(rand() * 40);
  let s = "";
  for (let k = 0; k < n; k++) s += pick(pool);
  add(s);
}

// Long inputs: a few KB each, including runs that exercise the BPE heap path.
add(gsm.slice(100, 130).map((e) => e.question + "\n" + e.answer).join("\n\n"));
add("你好世界".repeat(600));
add("a".repeat(3000));
add(" ".repeat(2000) + "x");
add("\n".repeat(500) + " \t ".repeat(300));
add("1234567890".repeat(300));
add("😀".repeat(500));
add(("The quick brown fox jumps over the lazy dog. " + "Größe café naïve 中文 123 ").repeat(80));
add("abcdefghijklmnopqrstuvwxyz".repeat(100)); // one 2.6 KB letter run

// Chat-rendered prompts, Qwen3 template (rendered by @huggingface/jinja,
// the Jinja engine of transformers.js).
const cfg = readJSON(path.join(testdata, "qwen3/tokenizer_config.json.gz"));
const tmpl = new Template(cfg.chat_template);
const weatherTool = {
  type: "function",
  function: {
    name: "get_weather",
    description: "Get the current weather in a city.",
    parameters: {
      type: "object",
      properties: { city: { type: "string", description: "City name, e.g. Paris" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
      required: ["city"],
    },
  },
};
const calcTool = { type: "function", function: { name: "calc", description: "Evaluate arithmetic.", parameters: { type: "object", properties: { expr: { type: "string" } }, required: ["expr"] } } };
const chats = [
  { name: "single user", messages: [{ role: "user", content: "What is 2+2?" }], add_generation_prompt: true },
  { name: "system + user, thinking off", messages: [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: "Reverse the text: hello" }], add_generation_prompt: true, enable_thinking: false },
  { name: "thinking on explicitly", messages: [{ role: "user", content: "Solve x+1=3." }], add_generation_prompt: true, enable_thinking: true },
  {
    name: "multi-turn with earlier think content",
    messages: [
      { role: "system", content: "Answer briefly." },
      { role: "user", content: "Natalia sold clips to 48 of her friends. How many?" },
      { role: "assistant", content: "<think>\n48 clips in April, half in May.\n</think>\n\nShe sold 72 clips." },
      { role: "user", content: "And in June, if she sold twice as many as May?" },
    ],
    add_generation_prompt: true,
  },
  {
    name: "multi-turn, thinking off, no generation prompt",
    messages: [
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello! How can I help?" },
      { role: "user", content: "Say bye." },
      { role: "assistant", content: "<think>\nuser wants bye\n</think>\n\nBye!" },
    ],
    add_generation_prompt: false, enable_thinking: false,
  },
  {
    name: "tools, tool calls and tool responses",
    messages: [
      { role: "system", content: "You can call tools." },
      { role: "user", content: "Weather in Paris and 17*23?" },
      {
        role: "assistant", content: "",
        tool_calls: [
          { type: "function", function: { name: "get_weather", arguments: { city: "Paris", unit: "celsius" } } },
          { type: "function", function: { name: "calc", arguments: { expr: "17*23" } } },
        ],
      },
      { role: "tool", content: "{\"temp\": 18, \"sky\": \"cloudy\"}" },
      { role: "tool", content: "391" },
      { role: "assistant", content: "It is 18°C and cloudy in Paris; 17*23 = 391." },
    ],
    tools: [weatherTool, calcTool],
    add_generation_prompt: false,
  },
  {
    name: "tools without system, pending tool response",
    messages: [
      { role: "user", content: "Compute 2**10." },
      { role: "assistant", content: "Let me compute.", tool_calls: [{ type: "function", function: { name: "calc", arguments: "{\"expr\": \"2**10\"}" } }] },
      { role: "tool", content: "1024" },
    ],
    tools: [calcTool],
    add_generation_prompt: true,
  },
  {
    name: "reasoning_content field",
    messages: [
      { role: "user", content: "Pick a colour." },
      { role: "assistant", content: "Blue.", reasoning_content: "Any colour works; blue is common." },
      { role: "user", content: "Another?" },
    ],
    add_generation_prompt: true, enable_thinking: false,
  },
  {
    name: "unicode and special text in content",
    messages: [
      { role: "system", content: "Réponds en français. 你好!" },
      { role: "user", content: "Écris « bonjour » 🎉 et <b>gras</b>\n\n  avec espaces." },
    ],
    add_generation_prompt: true,
  },
  {
    name: "assistant last with thinking (continuation)",
    messages: [
      { role: "user", content: "Count to three." },
      { role: "assistant", content: "<think>\nsimple\n</think>\n\n1, 2, 3" },
    ],
    add_generation_prompt: false,
  },
];
const rendered = [];
for (const c of chats) {
  const ctx = { messages: c.messages, add_generation_prompt: c.add_generation_prompt };
  if (c.enable_thinking !== undefined) ctx.enable_thinking = c.enable_thinking;
  if (c.tools) ctx.tools = c.tools;
  const text = tmpl.render(ctx);
  rendered.push({ ...c, rendered: text });
  add(text);
}

fs.writeFileSync(path.join(testdata, "corpus.jsonl"), corpus.map((s) => JSON.stringify(s)).join("\n") + "\n");
fs.writeFileSync(path.join(testdata, "chat-qwen3.json"), JSON.stringify(rendered, null, 1) + "\n");
console.log(`corpus: ${corpus.length} strings, ${corpus.reduce((n, s) => n + Buffer.byteLength(s), 0)} bytes; chats: ${rendered.length}`);
