package tokenizer

import "unicode/utf8"

// byteToRune is GPT-2's byte-level alphabet: every byte maps to a printable
// rune so that vocab entries are valid strings. Printable Latin-1 bytes map
// to themselves; the rest are shifted to U+0100 upwards in byte order.
var byteToRune [256]rune

// runeToByte inverts byteToRune; runes outside the alphabet are absent.
var runeToByte = map[rune]byte{}

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelDecode turns a vocab string in the byte-level alphabet back into
// the raw bytes it stands for. ok is false if a rune is outside the alphabet
// (such an entry can never be produced by the byte-level pre-tokenizer).
func byteLevelDecode(s string) (raw string, ok bool) {
	out := make([]byte, 0, len(s))
	for _, r := range s {
		b, in := runeToByte[r]
		if !in {
			return "", false
		}
		out = append(out, b)
	}
	return string(out), true
}

// byteLevelEncode is the inverse of byteLevelDecode.
func byteLevelEncode(raw string) string {
	out := make([]byte, 0, 2*len(raw))
	for i := 0; i < len(raw); i++ {
		out = utf8.AppendRune(out, byteToRune[raw[i]])
	}
	return string(out)
}
