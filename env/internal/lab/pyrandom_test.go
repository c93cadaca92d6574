package lab

import "testing"

// TestPyRandomMatchesCPython holds PyRandom to values CPython 3.11 gave:
// random.Random(1337420): [r.randint(1, 5) for _ in range(8)],
// r.randint(0, 10**6) and, after those, the shuffle of range(10), then
// sum((i+1) * r.randint(0, 99) for i in range(1000)) (past the state's
// first 624 words).
func TestPyRandomMatchesCPython(t *testing.T) {
	r := NewPyRandom(1337420)
	var got []int
	for i := 0; i < 8; i++ {
		got = append(got, r.Between(1, 5))
	}
	got = append(got, r.Between(0, 1_000_000))
	xs := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	got = append(got, xs...)
	want := []int{3, 1, 1, 4, 1, 1, 5, 1, 723662, 7, 1, 3, 6, 4, 2, 9, 5, 8, 0}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	sum := 0
	for i := 0; i < 1000; i++ {
		sum += (i + 1) * r.Between(0, 99)
	}
	if sum != 25596195 {
		t.Errorf("weighted sum of 1000 draws %d, CPython %d", sum, 25596195)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}
