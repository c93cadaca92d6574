// Package lab holds what the builtin environments share to behave as
// Prime Intellect's Lab environments do: the seeded random source of
// their synthetic data, verifiers' math rubric and answer parsing, the
// "synthetic" dataset choice and loading a Lab dataset from the hub.
package lab
