// Package atomicfile owns crash-safe writing of files and directories that
// users keep: run directories, checkpoints, adapters, merged models,
// installed environments, the hub cache.
//
// Every write goes to a temporary name beside its target (so the final
// rename stays on one filesystem), is fsynced, renamed into place, and the
// directory that holds it is fsynced so that the rename itself survives a
// power cut. A crash or a failed write therefore leaves the old version or
// the new one, never a torn one, and no temporary file behind when the
// failure is an error rather than a crash. A directory that is replaced is
// vetted before anything is touched, moved aside rather than deleted, and
// moved back if the new one cannot be put in its place.
package atomicfile
