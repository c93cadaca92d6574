// Package logread decodes the run directory's TensorBoard event files and
// W&B offline run files for tests. It is written apart from the writers
// (rundir/tfevents, rundir/wandb, internal/protoenc) on purpose and shares
// no code with them: its own framing, checksums and protobuf decoding, from
// the formats' specifications, so a writer bug is not mirrored by its
// reader and a test passes only if the bytes are what TensorBoard and
// `wandb sync` expect.
package logread
