// Package workspace owns `grpo init`: which files a new workspace holds
// and writing them. The files themselves live in the repository under
// examples/workspace/ and are embedded from there (package examples), so
// what grpo init writes is what the repository shows.
package workspace
