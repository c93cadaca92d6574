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
		log=$(mktemp)
		if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
			# Go's fuzzing coordinator can report "context deadline exceeded"
			# when a worker is slow to stop at the end of -fuzztime (a busy
			# 2-core machine), with no input at fault. A real failure writes
			# its input under testdata/fuzz/ and says so: that one fails at
			# once; the engine's own timeout gets one rerun.
			if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
				echo "fuzz: $pkg $name: the fuzzing engine timed out stopping, with no failing input; running it again"
				go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"
			else
				rm -f "$log"
				exit 1
			fi
		fi
		rm -f "$log"
		count=$((count + 1))
	done
done
echo "fuzz: $count targets ran for $fuzztime each"
