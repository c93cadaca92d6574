package cuda

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flashSharedBytes is the dynamic shared memory the host launches the
// flash attention kernel named name with (attention_flash.go,
// attention_flash_tc.go), or false for a kernel it does not launch.
func flashSharedBytes(name string) (int, bool) {
	m := regexp.MustCompile(`^attention_flash_(tc_)?(dq_|dkdv_)?hd(\d+)(_bf16|_f32|_dkdv|_dk|_dv)?$`).FindStringSubmatch(name)
	if m == nil {
		return 0, false
	}
	hd, _ := strconv.Atoi(m[3])
	ts := 2
	if m[4] == "_f32" {
		ts = 4
	}
	switch {
	case m[1] == "" && m[2] == "":
		return flashForwardShared(hd, ts), true
	case m[1] == "":
		return flashBackwardShared(hd, ts), true
	case m[2] == "":
		return ftcForwardShared(hd), true
	case m[2] == "dq_":
		return ftcDqShared(hd), true
	default:
		return ftcDkdvShared(hd), true
	}
}

// TestFlashSharedAccessesInBounds reads every shared-memory access at a
// constant offset in the committed PTX of the flash kernels and requires
// it to end inside the shared memory the host gives the kernel. nvcc
// merges neighbouring loads into one 16-byte ld.shared.v4 when it knows
// the alignment, so three control ints at the end of a region read as
// four: the H100's compute-sanitizer memcheck found exactly that
// (attention_flash_hd16_f32 reading 4 bytes past its 49,932), which no
// conformance result showed.
func TestFlashSharedAccessesInBounds(t *testing.T) {
	files, _ := filepath.Glob("ptx/attention_flash*.ptx")
	if len(files) == 0 {
		t.Fatal("no ptx/attention_flash*.ptx")
	}
	entry := regexp.MustCompile(`\.entry ([A-Za-z0-9_]+)`)
	access := regexp.MustCompile(`\b(?:ld|st)\.shared((?:\.v[24])?)\.[a-z]*(8|16|32|64)\s.*\[grpo_smem_(?:\+(\d+))?\]`)
	kernels := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, limit, known := "", 0, false
		for _, line := range strings.Split(string(b), "\n") {
			if m := entry.FindStringSubmatch(line); m != nil {
				name = m[1]
				limit, known = flashSharedBytes(name)
				if !known {
					t.Errorf("%s: kernel %s: no host shared size known to this test", f, name)
				}
				kernels++
				continue
			}
			m := access.FindStringSubmatch(line)
			if m == nil || !known {
				continue
			}
			lanes := 1
			if m[1] != "" {
				lanes, _ = strconv.Atoi(m[1][2:])
			}
			bits, _ := strconv.Atoi(m[2])
			off, _ := strconv.Atoi(m[3])
			if end := off + lanes*bits/8; end > limit {
				t.Errorf("%s: %s: %q ends at byte %d of %d launched", filepath.Base(f), name, strings.TrimSpace(line), end, limit)
			}
		}
	}
	if kernels < 30 {
		t.Errorf("read %d flash kernels, want every instantiation (≥ 30)", kernels)
	}
}
