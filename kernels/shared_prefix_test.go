package kernels

import (
	"slices"
	"strings"
	"testing"
)

// TestPrefixGroups: over blocks of 4, sequences 0–2 share blocks 10, 11
// and (0 and 1 only) 12; sequence 3 shares block 10 with them but sits
// after sequence 4, which shares nothing, so it is alone. Token 0 at
// position 11 attends to blocks 10–12 in full, token 2 at position 8 only
// to 10 and 11, so the group of tokens 0–2 shares 2 blocks, not 3.
// Every answer passes CheckPrefixGroups, and each broken one is refused
// with what is wrong.
func TestPrefixGroups(t *testing.T) {
	const maxBlocks, bs = 4, 4
	table := []int32{
		10, 11, 12, 13,
		10, 11, 12, 14,
		10, 11, 15, -1,
		10, 16, -1, -1,
		17, 18, 19, -1,
	}
	seq, pos := []int32{0, 1, 2, 4, 3}, []int32{11, 14, 8, 9, 5}
	got := PrefixGroups(table, maxBlocks, bs, seq, pos)
	want := []int32{0, 3, 2, 0, 3, 2, 0, 3, 2, 3, 1, 0, 4, 1, 0}
	if !slices.Equal(got, want) {
		t.Fatalf("PrefixGroups = %v, want %v", got, want)
	}
	if err := CheckPrefixGroups(got, table, maxBlocks, bs, seq, pos); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(g []int32)
		error string
	}{
		{"three blocks shared", func(g []int32) { g[2], g[5], g[8] = 3, 3, 3 }, "does not attend"},
		{"member outside", func(g []int32) { g[1], g[4], g[7] = 4, 4, 4 }, "differs"},
		{"differing blocks", func(g []int32) { g[9], g[10], g[11], g[12], g[13], g[14] = 3, 2, 1, 3, 2, 1 }, "shared block 0 is 10"},
		{"group after token", func(g []int32) { g[9] = 4 }, "does not hold it"},
	} {
		g := slices.Clone(got)
		tc.edit(g)
		err := CheckPrefixGroups(g, table, maxBlocks, bs, seq, pos)
		if err == nil || !strings.Contains(err.Error(), tc.error) {
			t.Errorf("%s: CheckPrefixGroups(%v) = %v, want an error saying %q", tc.name, g, err, tc.error)
		}
	}
}
