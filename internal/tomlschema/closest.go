package tomlschema

import "strings"

// Closest returns the valid key nearest to name by Damerau–Levenshtein
// distance, if it is near enough to be a typo.
func Closest(name string, valid []string) string {
	best, bestD := "", 1<<30
	for _, v := range valid {
		if d := editDistance(strings.ToLower(name), v); d < bestD {
			best, bestD = v, d
		}
	}
	limit := 2
	if len(name) >= 10 {
		limit = 3
	}
	if bestD <= limit && bestD < len(name) {
		return best
	}
	// Also catch a key written with dashes or in camelCase.
	norm := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	for _, v := range valid {
		if strings.ReplaceAll(v, "_", "") == strings.ReplaceAll(norm, "_", "") {
			return v
		}
	}
	return ""
}

// editDistance is the optimal-string-alignment Damerau–Levenshtein
// distance: insertions, deletions, substitutions and adjacent
// transpositions each cost 1.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
