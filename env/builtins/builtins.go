// Package builtins links every environment grpo ships into a program:
// the builtins (reverse-text, gsm8k, math, math-python, alphabet-sort,
// wordle, wiki-search), custom environment.toml directories and Python
// (verifiers) environments, each registering itself with package env on
// init. The trainer and the grpo command import it, so that a config
// names any of them by id; a program that wants fewer imports only those.
package builtins

import (
	_ "github.com/grpo-dev/grpo/env/alphabetsort"
	_ "github.com/grpo-dev/grpo/env/custom"
	_ "github.com/grpo-dev/grpo/env/gsm8k"
	_ "github.com/grpo-dev/grpo/env/mathenv"
	_ "github.com/grpo-dev/grpo/env/mathpython"
	_ "github.com/grpo-dev/grpo/env/pyenv"
	_ "github.com/grpo-dev/grpo/env/reversetext"
	_ "github.com/grpo-dev/grpo/env/wikisearch"
	_ "github.com/grpo-dev/grpo/env/wordle"
)
