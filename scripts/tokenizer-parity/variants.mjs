// The tokenizer files the parity tests cover. qwen3 is Qwen3's real file;
// the others are derived from it the same way tokenizer/variants_test.go
// derives them, so one 151k vocabulary exercises the settings of other
// families:
//   qwen25: Qwen2.5's layout — no <think>/<tool_response> tokens, merges as
//           "a b" strings (tokenizers < 0.20);
//   llama3: Llama 3's split pattern (\p{N}{1,3}), ignore_merges, and a
//           TemplateProcessing post-processor that prepends <|begin_of_text|>;
//   gpt2:   no normalizer, ByteLevel pre-tokenizer with use_regex (GPT-2's
//           pattern, run through regexp2 on the Go side).
import fs from "node:fs";
import zlib from "node:zlib";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const testdata = path.join(root, "testdata/tokenizer");

export function readJSON(p) {
  let data = fs.readFileSync(p);
  if (p.endsWith(".gz")) data = zlib.gunzipSync(data);
  return JSON.parse(data.toString("utf8"));
}

export const llama3Pattern =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const llamaAdded = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"];

export function variants() {
  const qwen3 = readJSON(path.join(testdata, "qwen3/tokenizer.json.gz"));
  const clone = () => JSON.parse(JSON.stringify(qwen3));

  const qwen25 = clone();
  qwen25.added_tokens = qwen25.added_tokens.filter((t) => t.id < 151665);
  qwen25.model.merges = qwen25.model.merges.map(([a, b]) => `${a} ${b}`);

  const llama3 = clone();
  llama3.pre_tokenizer.pretokenizers[0].pattern.Regex = llama3Pattern;
  llama3.model.ignore_merges = true;
  llama3.added_tokens = llamaAdded.map((content, i) => ({
    id: 151643 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
  }));
  llama3.post_processor = {
    type: "Sequence",
    processors: [
      { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
      {
        type: "TemplateProcessing",
        single: [{ SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
        pair: [
          { SpecialToken: { id: "<|begin_of_text|>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } },
          { SpecialToken: { id: "<|begin_of_text|>", type_id: 1 } }, { Sequence: { id: "B", type_id: 1 } },
        ],
        special_tokens: { "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [151643], tokens: ["<|begin_of_text|>"] } },
      },
    ],
  };

  const gpt2 = clone();
  gpt2.normalizer = null;
  gpt2.pre_tokenizer = { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true };

  return { qwen3, qwen25, llama3, gpt2 };
}

// Which encode each variant's reference uses: llama3 with the
// post-processor (add_special_tokens=true), the rest without.
export const withSpecial = { qwen3: false, qwen25: false, llama3: true, gpt2: false };
