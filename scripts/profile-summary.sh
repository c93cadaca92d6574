#!/usr/bin/env bash
# scripts/profile-summary.sh FILE [TOP]: one line from the output of
# `grpo bench --profile --json` (the JSON line in FILE) for the GPU check's
# results file: the train micro-batch's and the op-by-op decode step's wall
# time (ms), kernel time (its share of the wall), GPU idle time between ops
# (span − kernels) and the TOP (default 8) entries by total time — name,
# milliseconds, % of the phase's wall — then the graph-replayed decode step's
# and the prefill's wall and kernel time (with --grpo-step: train, then
# generate, each with its entries). Entries beyond TOP are summed as
# "(N more)". No jq or python: grep and awk, which every machine has.
set -uo pipefail
file=$1 top=${2:-8}
# The JSON's profile fields, in order: each phase's "phase" and
# "wall_ms", its entries, then its "kernel_ms" and "span_ms" (the
# figures' entries have "value", not "launches", and do not match).
grep -oE '"phase":"[^"]*","wall_ms":[-0-9.e+]+|"name":"[^"]*","launches":[0-9]+,"ms":[-0-9.e+]+|"kernel_ms":[-0-9.e+]+,"span_ms":[-0-9.e+]+' "$file" |
	awk -v top="$top" '
	function num(s) { sub(/.*:/, "", s); return s + 0 }
	function str(s, key) { s = substr(s, index(s, "\"" key "\":\"") + length(key) + 4); return substr(s, 1, index(s, "\"") - 1) }
	function flush() {
		if (phase == "") return
		if (more > 0) entries = entries sprintf("; (%d more) %.3g", more, moreMs)
		line = sprintf("%s: wall %.4g ms, kernels %.4g (%.0f%%), idle %.3g", phase, wall, kern, wall > 0 ? 100 * kern / wall : 0, span - kern)
		if (phase ~ /train|op by op|generate/) line = line ": " entries
		if (phase ~ /train/) b[1] = b[1] (b[1] == "" ? "" : " | ") line
		else if (phase ~ /op by op|generate/) b[2] = b[2] (b[2] == "" ? "" : " | ") line
		else b[3] = b[3] (b[3] == "" ? "" : " | ") line
		phase = ""
	}
	/^"phase"/ { flush(); phase = str($0, "phase"); wall = num($0); n = 0; more = 0; moreMs = 0; entries = ""; next }
	/^"name"/ {
		ms = num($0)
		if (++n > top) { more++; moreMs += ms; next }
		entries = entries (n > 1 ? "; " : "") sprintf("%s %.3g %.0f%%", str($0, "name"), ms, wall > 0 ? 100 * ms / wall : 0)
		next
	}
	/^"kernel_ms"/ { split($0, f, ","); kern = num(f[1]); span = num(f[2]); next }
	END {
		flush()
		for (i = 1; i <= 3; i++) if (b[i] != "") out = out (out == "" ? "" : " | ") b[i]
		if (out == "") { print "no profile in the output"; exit 1 }
		print out
	}'
