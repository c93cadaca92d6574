module github.com/grpo-dev/grpo

go 1.26
