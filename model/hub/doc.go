// Package hub owns finding model and dataset repositories on disk: a local
// directory, the Hugging Face cache, or a download from the Hugging Face Hub
// into that cache.
//
// The cache is laid out exactly as huggingface_hub lays it out, so Python
// tools and grpo share one copy of every file:
//
//	$HF_HUB_CACHE/models--Qwen--Qwen3-0.6B/
//	    refs/main                      commit hash the branch pointed to
//	    blobs/<etag>                   file contents, named by git sha1 or LFS sha256
//	    blobs/<etag>.incomplete        a download in progress; resumed with Range
//	    snapshots/<commit>/config.json relative symlink to ../../blobs/<etag>
//	$HF_HUB_CACHE/.locks/models--Qwen--Qwen3-0.6B/<etag>.lock
//
// A file appears in snapshots/ only once its blob is complete and verified,
// and refs/<revision> is written last, so an interrupted download never
// leaves a snapshot that looks complete.
package hub
