// Package tokenizer owns text ↔ token ids for the models grpo trains: it
// loads a Hugging Face tokenizer.json (byte-level BPE with merges, the NFC
// normalizer, a Split(regex) + ByteLevel pre-tokenizer, added and special
// tokens, the ByteLevel decoder) and tokenizer_config.json (eos/pad/bos, the
// Jinja chat template), and encodes exactly as Hugging Face tokenizers does.
//
// The BPE and the pre-tokenizer are written here rather than taken from
// github.com/sugarme/tokenizer: Qwen3's split pattern contains the negative
// lookahead `\s+(?!\S)`, which Go's regexp rejects, and sugarme v0.3.0 panics
// on Qwen3's file. Patching it with a custom pre-tokenizer would still leave
// its string-keyed BPE, which is far below the 5 MB/s we need. So:
//
//   - the split patterns used by Qwen2/2.5/3 (`\p{N}`), Qwen3.5/3.6
//     (`\p{N}`, and `[\p{L}\p{M}]+`: letters absorb combining marks) and
//     Llama 3 (`\p{N}{1,3}`) are matched by a hand-written scanner
//     (splitter.go) that follows Oniguruma's semantics, which is what HF
//     tokenizers (Rust) uses:
//     `\s` is Unicode White_Space plus U+0085 (not U+FEFF, unlike JavaScript),
//     and `(?i:'s|…)` folds ASCII case only;
//   - any other pattern goes through github.com/dlclark/regexp2, whose .NET
//     syntax has lookahead and the same `\s` as Oniguruma; the tests check the
//     hand-written scanner against it;
//   - the BPE works on raw bytes with integer merge ranks and a cache.
//
// Parity is checked against the HF tokenizers Rust library (npm package
// `tokenizers`) and transformers.js on a committed corpus; see
// scripts/tokenizer-parity.
//
// Use: Load(dir) (or LoadFiles/FromJSON; Load also reads
// chat_template.jinja, which replaces the config's template as in
// transformers and is where Qwen3.5 ships its template), then Encode — HF's
// encode(add_special_tokens=False), added tokens written in the text
// matched — or EncodeWithSpecialTokens, which adds what the post-processor
// adds (Llama 3's <|begin_of_text|>). Decode returns the exact bytes.
// ApplyChatTemplate renders tokenizer_config.json's Jinja template with
// gonja, configured as transformers does (trim_blocks, lstrip_blocks,
// Python-style tojson, raise_exception, and items/string with Python's
// semantics: chat_python.go). ToolCallFormat names the call format the
// template teaches (Hermes JSON, Qwen3.5's XML, Llama 3's JSON) and its
// Parse reads sampled turns back into calls.
//
// Not supported, with an error at load time rather than different ids:
// non-BPE models, BPE dropout, byte_fallback, ByteLevel add_prefix_space,
// Split behaviours other than "Isolated", added tokens with single_word.
// Added tokens marked normalized=true are matched in the text before
// normalization (HF matches them after); the families above mark all their
// added tokens normalized=false, where the two agree.
package tokenizer
