#!/usr/bin/env bash
# CI's AddressSanitizer job: the emulator built with -fsanitize=address (its
# kernels, the fiber runtime, the C heap that stands in for device memory)
# runs the emu conformance suites — forward, training, sampling ops — and
# TestASanCatchesPlantedOOB, which requires ASan to stop add_f32 compiled to
# read past its operands (k_planted_oob.cc) with a report naming the kernel.
# Any out-of-bounds access by a kernel in the suites fails the job the same
# way. The test binary is built with -c: `go test` run directly links
# without DWARF, and the report could then not name the kernel.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
export CGO_CXXFLAGS="-O1 -g -fsanitize=address -fno-omit-frame-pointer"
go test -asan -c -o "$bin/emu.test" ./kernels/emu/
built=$((SECONDS - t0))
# detect_leaks=0: the conformance suites free what they allocate, but cgo's
# and the Go runtime's own allocations are not ours to account for.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=0"
if command -v llvm-symbolizer >/dev/null; then export ASAN_SYMBOLIZER_PATH="$(command -v llvm-symbolizer)"; fi
status=0
(cd kernels/emu && "$bin/emu.test" -test.run '^(TestConformance|TestTrainConformance|TestSampleConformance|TestASanCatchesPlantedOOB)$' -test.v -test.timeout 15m) >"$bin/log" 2>&1 || status=$?
# Top-level results, and all of any ASan report or failure.
grep -E '^(--- |PASS|FAIL|ok)|asan_test|AddressSanitizer|^\s+--- FAIL' "$bin/log" || true
if [ "$status" != 0 ]; then tail -80 "$bin/log"; fi
echo "asan: built in ${built}s, ran in $((SECONDS - t0 - built))s, status $status"
exit "$status"
