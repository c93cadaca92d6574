package rubric

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
)

type difflibPair struct {
	Kind  string  `json:"kind"`
	A     string  `json:"a"`
	B     string  `json:"b"`
	Ratio float64 `json:"ratio"`
}

func loadDifflibPairs(t testing.TB) []difflibPair {
	t.Helper()
	f, err := os.Open("../testdata/rubric/difflib_pairs.jsonl.gz")
	if err != nil {
		t.Fatalf("golden pairs missing (regenerate with `python3 scripts/difflib_golden.py`): %v", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []difflibPair
	sc := bufio.NewScanner(gz)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var p difflibPair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("line %d: %v", len(pairs)+1, err)
		}
		pairs = append(pairs, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pairs
}

// TestRatioMatchesCPython checks Ratio against difflib.SequenceMatcher(None, a,
// b).ratio() from CPython 3.11 on every pair of the golden file.
func TestRatioMatchesCPython(t *testing.T) {
	pairs := loadDifflibPairs(t)
	if len(pairs) < 3000 {
		t.Fatalf("only %d golden pairs; the file is truncated", len(pairs))
	}
	kinds := map[string]int{}
	long := 0
	for n, p := range pairs {
		got := Ratio(p.A, p.B)
		if d := math.Abs(got - p.Ratio); d > 1e-12 || math.IsNaN(got) {
			t.Errorf("pair %d (%s, len %d/%d): Ratio = %.17g, CPython %.17g",
				n+1, p.Kind, len([]rune(p.A)), len([]rune(p.B)), got, p.Ratio)
		}
		kinds[p.Kind]++
		if len([]rune(p.B)) >= 200 {
			long++
		}
	}
	// The file must keep exercising autojunk and real text.
	if long < 1000 || kinds["gsm8k-long"] == 0 || kinds["unicode"] == 0 || kinds["threshold"] == 0 {
		t.Errorf("golden file lacks coverage: %d pairs with len(b) >= 200, kinds %v", long, kinds)
	}
}

func TestRatioSmallCases(t *testing.T) {
	// Values worked out by hand from difflib's algorithm.
	cases := []struct {
		a, b string
		want float64
	}{
		{"", "", 1},
		{"abc", "", 0},
		{"abcd", "bcde", 0.75},     // block "bcd": 2*3/8
		{"abxcd", "abcd", 8.0 / 9}, // blocks "ab", "cd"
		{"héllo", "hello", 0.8},    // code points, not bytes: 2*4/10
		{"😀a", "a😀", 0.5},          // one block of size 1: 2*1/4
	}
	for _, c := range cases {
		if got := Ratio(c.a, c.b); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("Ratio(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestRatioAutojunkAsymmetry(t *testing.T) {
	// b has 200 'a's: 'a' is popular, so no match can start in b, and the
	// empty match at (0, 0) cannot be extended because a starts with 'x'.
	// With the roles swapped 'a' is not popular in b. (CPython 3.11 gives
	// 0.0 and 0.009900990099009901.)
	a := "xa"
	b := strings.Repeat("a", 200)
	if got := Ratio(a, b); got != 0 {
		t.Errorf("Ratio(xa, popular b) = %v, want 0 (autojunk)", got)
	}
	if got := Ratio(b, a); got != 2.0/202 {
		t.Errorf("Ratio(popular, xa) = %v, want %v", got, 2.0/202)
	}
}

func BenchmarkRatio(b *testing.B) {
	pairs := loadDifflibPairs(b)
	var long []difflibPair
	for _, p := range pairs {
		if p.Kind == "gsm8k-long" {
			long = append(long, p)
		}
	}
	b.Run("gsm8k-long", func(b *testing.B) {
		chars := 0
		for _, p := range long {
			chars += len([]rune(p.A)) + len([]rune(p.B))
		}
		b.ReportMetric(float64(chars)/float64(len(long)), "chars/pair")
		for n := 0; n < b.N; n++ {
			p := long[n%len(long)]
			Ratio(p.A, p.B)
		}
	})
	b.Run("random-2000", func(b *testing.B) {
		x := strings.Repeat("the quick brown fox jumps over the lazy dog ", 46)[:2000]
		y := []rune(x)
		for i, j := 0, len(y)-1; i < j; i, j = i+1, j-1 {
			y[i], y[j] = y[j], y[i]
		}
		ys := string(y)
		for n := 0; n < b.N; n++ {
			Ratio(x, ys)
		}
	})
}
