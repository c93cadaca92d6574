// Package safetensors owns the Hugging Face safetensors format: reading a
// single file or a sharded set (model.safetensors.index.json) through a
// read-only memory map, validating every header field before any tensor is
// touched, converting F32/F16/BF16 payloads to float32, and writing files
// deterministically and atomically.
//
// The format: 8 bytes little-endian u64 N, then N bytes of JSON header, then
// the data section. The header maps tensor names to
// {"dtype","shape","data_offsets":[begin,end]} with offsets relative to the
// start of the data section, plus an optional "__metadata__" string map.
//
// A malformed file never panics: Open returns one error line that names the
// file, the tensor or key, the offending value and, where there is one, the
// fix. Tensors returned by a File or Set alias the mapping and stay valid
// only until Close.
package safetensors
