package lab

// PyRandom is CPython's random.Random: the Mersenne Twister (MT19937)
// seeded as random.Random(int) seeds it, with randint, shuffle and
// choice drawing as CPython 3.11-3.13 draw. The Lab's v1 alphabet-sort
// builds its task stream with random.Random(1337420); drawing the same
// numbers gives the same tasks, in the same order.
type PyRandom struct {
	mt  [624]uint32
	idx int
}

// NewPyRandom is random.Random(seed) for 0 <= seed < 2^32 (init_by_array
// with the seed as one 32-bit key word; larger seeds use more words).
func NewPyRandom(seed uint64) *PyRandom {
	key := []uint32{uint32(seed)}
	if hi := uint32(seed >> 32); hi != 0 {
		key = append(key, hi)
	}
	r := &PyRandom{}
	r.initGenrand(19650218)
	i, j := 1, 0
	for k := max(624, len(key)); k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1664525)) + key[j] + uint32(j)
		i, j = i+1, j+1
		if i >= 624 {
			r.mt[0], i = r.mt[623], 1
		}
		if j >= len(key) {
			j = 0
		}
	}
	for k := 623; k > 0; k-- {
		r.mt[i] = (r.mt[i] ^ ((r.mt[i-1] ^ (r.mt[i-1] >> 30)) * 1566083941)) - uint32(i)
		i++
		if i >= 624 {
			r.mt[0], i = r.mt[623], 1
		}
	}
	r.mt[0] = 0x80000000
	return r
}

func (r *PyRandom) initGenrand(s uint32) {
	r.mt[0] = s
	for i := 1; i < 624; i++ {
		r.mt[i] = 1812433253*(r.mt[i-1]^(r.mt[i-1]>>30)) + uint32(i)
	}
	r.idx = 624
}

// uint32 is genrand_uint32.
func (r *PyRandom) uint32() uint32 {
	if r.idx >= 624 {
		for k := 0; k < 624; k++ {
			y := r.mt[k]&0x80000000 | r.mt[(k+1)%624]&0x7fffffff
			v := r.mt[(k+397)%624] ^ y>>1
			if y&1 != 0 {
				v ^= 0x9908b0df
			}
			r.mt[k] = v
		}
		r.idx = 0
	}
	y := r.mt[r.idx]
	r.idx++
	y ^= y >> 11
	y ^= y << 7 & 0x9d2c5680
	y ^= y << 15 & 0xefc60000
	return y ^ y>>18
}

// Intn is _randbelow(n): getrandbits(n.bit_length()) until below n; n > 0.
// Only n < 2^32 occurs here (list lengths, name counts).
func (r *PyRandom) Intn(n int) int {
	k := 0
	for v := n; v > 0; v >>= 1 {
		k++
	}
	for {
		if v := int(r.uint32() >> (32 - k)); v < n {
			return v
		}
	}
}

// Between is randint(lo, hi).
func (r *PyRandom) Between(lo, hi int) int { return lo + r.Intn(hi-lo+1) }

// Shuffle is random.shuffle.
func (r *PyRandom) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.Intn(i+1))
	}
}
