#!/usr/bin/env bash
# Runs every Fuzz* target in the module for FUZZTIME each (default 10s).
# Targets are found by `go test -list`, so a new one is picked up without
# editing this file, and build constraints are honoured. `go test -fuzz`
# takes one target per run, hence one run per target.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-10s}
pkgs=$(grep -rl --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' . | xargs -n1 dirname | sort -u | sed 's|^\./||; s|^|./|')
count=0
for pkg in $pkgs; do
	for name in $(go test -run '^$' -list '^Fuzz' "$pkg" | grep -E '^Fuzz'); do
		echo "fuzz: $pkg $name for $fuzztime"
		go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
		count=$((count + 1))
	done
done
echo "fuzz: $count targets ran for $fuzztime each"
