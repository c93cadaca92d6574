package rubric

import (
	"math"
	"strconv"
	"strings"
)

// ExactMatch reports whether got and want are equal after trimming white
// space at both ends.
func ExactMatch(got, want string) bool {
	return PyStrip(got) == PyStrip(want)
}

// NumericMatch reports whether got and want are the same number (see
// ParseNumber), to a relative tolerance of 1e-6. Two strings that are not
// both numbers never match.
func NumericMatch(got, want string) bool {
	g, ok1 := ParseNumber(got)
	w, ok2 := ParseNumber(want)
	return ok1 && ok2 && closeEnough(g, w)
}

// closeEnough is a relative comparison; float rounding of equal decimal
// strings is far below 1e-6, while different answers are far above it.
func closeEnough(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-6*math.Max(math.Abs(a), math.Abs(b))
}

// ParseNumber reads a number the way answers are written: "1,234", "$18.00",
// "45%", "-3.5", "72.", "1e-3", "3/4", "−2" (Unicode minus). It rejects
// anything else, including NaN and infinities.
func ParseNumber(s string) (float64, bool) {
	s = PyStrip(s)
	s = strings.ReplaceAll(s, "−", "-")
	s = strings.TrimSuffix(s, ".")
	s = strings.TrimSuffix(s, "%")
	neg := false
	if strings.HasPrefix(s, "-") {
		neg, s = true, s[1:]
	} else {
		s = strings.TrimPrefix(s, "+")
	}
	s = strings.TrimPrefix(s, "$")
	s = strings.ReplaceAll(s, ",", "")
	s = strings.TrimSpace(s)
	var v float64
	if num, den, ok := strings.Cut(s, "/"); ok {
		n, ok1 := parsePlainFloat(num)
		d, ok2 := parsePlainFloat(den)
		if !ok1 || !ok2 || d == 0 {
			return 0, false
		}
		v = n / d
	} else {
		var ok bool
		if v, ok = parsePlainFloat(s); !ok {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	return v, true
}

// parsePlainFloat accepts decimal digits with an optional point and
// exponent only, so that strconv's hex floats, "inf", "nan" and
// underscores are not numbers here.
func parsePlainFloat(s string) (float64, bool) {
	if s == "" {
		return 0, false
	}
	digits := 0
	for i, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' || c == 'e' || c == 'E':
		case (c == '-' || c == '+') && i > 0 && (s[i-1] == 'e' || s[i-1] == 'E'):
		default:
			return 0, false
		}
	}
	if digits == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}
