#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks for grpo's tests and benchmarks.
# Tests need Go, and python3 for the Python bridge; the rest are for references and speed:
#   libopenblas0-pthread  the CPU backend's optional sgemm (dlopen'd at run time)
#   python3-torch         independent reference for golden files and benchmarks
#   python3               runs the Python-environment bridge's tests (env/pybridge)
#   python3-venv          `grpo env install` makes its own virtual environment (env/pyenv)
#   nodejs, npm           run the official openai npm client against grpo serve (serve's TestOpenAINodeClient)
#   bubblewrap, python3-numpy/sympy/scipy
#                         the sandbox for model-written code (sandbox/, docs/sandbox.md):
#                         Debian's python3 with the packages math-python promises, under bwrap
set -euo pipefail
need=()
command -v python3 >/dev/null 2>&1 || need+=(python3)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
dpkg -s libopenblas0-pthread >/dev/null 2>&1 || need+=(libopenblas0-pthread)
for p in bubblewrap python3 python3-venv python3-numpy python3-sympy python3-scipy; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ "${GRPO_SKIP_TORCH:-}" = "" ]; then
  dpkg -s python3-torch >/dev/null 2>&1 || need+=(python3-torch python3-numpy)
fi
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q "${need[@]}"
fi
