// Package workspace owns `grpo init`: which files a new workspace holds
// and writing them. The files themselves live in the repository under
// examples/workspace/ (and examples/legacy/ for --legacy-configs) and are
// embedded from there (package examples), so what grpo init writes is
// what the repository shows; examples/LAB_FILES.md names the source of
// each file copied from Prime Intellect Lab.
package workspace
