package endpoints

import (
	"fmt"
	"strconv"
	"strings"
)

// Seed is a request's seed: any uint64, written on the wire as the int64
// of the same bits. vLLM refuses seeds outside int64 (its seed field is
// bounded by torch.long), and grpo serve reads a negative seed back as
// its two's complement, so a trainer's per-rollout uint64 seed reaches
// grpo serve exactly and vLLM as a valid seed.
type Seed uint64

// MarshalJSON writes the seed as a signed 64-bit integer.
func (s Seed) MarshalJSON() ([]byte, error) {
	return strconv.AppendInt(nil, int64(s), 10), nil
}

// UnmarshalJSON reads a signed or unsigned 64-bit integer.
func (s *Seed) UnmarshalJSON(b []byte) error {
	t := strings.TrimSpace(string(b))
	if i, err := strconv.ParseInt(t, 10, 64); err == nil {
		*s = Seed(uint64(i))
		return nil
	}
	u, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		return fmt.Errorf("seed %s: want a 64-bit integer", t)
	}
	*s = Seed(u)
	return nil
}
