# grpo: build, test, benchmark. `make help` lists the targets.
GO ?= go
BIN := bin/grpo

.PHONY: help build test test-short bench lint fuzz golden tokenizer-refs deps

help: ## list targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/grpo
	$(GO) build -o $(BIN) ./cmd/grpo

test: ## run every test (the README's test command)
	$(GO) test ./...

test-short: ## skip the slow checks
	$(GO) test -short ./...

bench: build ## Go micro-benchmarks and grpo bench against PyTorch (see BENCHMARKS.md)
	$(GO) test -run '^$$' -bench . -benchtime 1x ./kernels/...
	./scripts/bench.sh

lint: ## gofmt + go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1)
	$(GO) vet ./...

deps: ## install what a fresh Debian machine lacks (apt packages, npm fixtures)
	bash scripts/install-deps.sh

golden: ## regenerate tiny models and every PyTorch golden file (needs python3-torch)
	$(GO) run ./testdata/gen
	/usr/bin/python3 testdata/reference/reference.py
	/usr/bin/python3 testdata/reference/grpo_loss.py
	/usr/bin/python3 testdata/reference/grpo_loss.py --moe
	/usr/bin/python3 testdata/reference/grpo_loss.py --family
	/usr/bin/python3 testdata/reference/policy_loss.py
	/usr/bin/python3 testdata/reference/adamw.py
	/usr/bin/python3 testdata/reference/attention_variant.py
	/usr/bin/python3 testdata/reference/glm4_moe_reference.py
	/usr/bin/python3 testdata/reference/glm4_moe_lora_grad.py
	/usr/bin/python3 testdata/reference/nemotron_h_reference.py
	/usr/bin/python3 testdata/reference/nemotron_h_lora_grad.py
	/usr/bin/python3 testdata/reference/gpt_oss_reference.py
	/usr/bin/python3 testdata/reference/gpt_oss_lora_grad.py
	$(GO) test ./lora -run TestOursAdapterFiles -update
	/usr/bin/python3 testdata/reference/peft_check.py
	python3 scripts/difflib_golden.py

tokenizer-refs: ## regenerate the HF tokenizers parity ids (needs node + npm)
	cd scripts/tokenizer-parity && npm ci && node corpus.mjs && node reference.mjs

fuzz: ## run every Fuzz* target for 30 s (scripts/fuzz-all.sh finds them)
	FUZZTIME=30s bash scripts/fuzz-all.sh

include kernels/cuda/ptx.mk
