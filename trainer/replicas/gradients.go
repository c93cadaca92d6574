package replicas

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/grpo-dev/grpo/kernels"
	"github.com/grpo-dev/grpo/lora"
)

// allReduceGrads sums the replicas' adapter gradients with one
// all-reduce: the adapter keeps its gradients in several buffers (per
// projection, per layer's grouped A, per stacked experts), so they are
// gathered end to end into one flat buffer on the device, summed, and
// scattered back — two device copies per parameter, one collective per
// step rather than one per parameter. Under expert parallelism the
// experts' gradients are left out: each rank's are its experts' whole
// over its EP group's tokens, and with DP > 1 they are summed with a
// second all-reduce over the devices that hold the same experts.
func (r *Replica) allReduceGrads() error {
	if err := r.sumGrads(r.coll, r.replicated(), &r.flat); err != nil {
		return err
	}
	if r.dp == nil {
		return nil
	}
	var experts []lora.Param
	for i, p := range r.Policy.Adapter.Params() {
		if r.local[i] {
			experts = append(experts, p)
		}
	}
	return r.sumGrads(r.dp, experts, &r.flatExperts)
}

// sumGrads sums params' gradients over coll through one flat buffer,
// *flat, allocated on first use.
func (r *Replica) sumGrads(coll kernels.Collective, params []lora.Param, flat *kernels.Buffer) error {
	if *flat == nil {
		n := 0
		for _, p := range params {
			n += p.Grad.Len()
		}
		*flat = r.Backend.Alloc(kernels.F32, n)
	}
	be := r.Backend
	off := 0
	for _, p := range params {
		be.Copy((*flat).Slice(off, p.Grad.Len()), p.Grad)
		off += p.Grad.Len()
	}
	if err := coll.AllReduceSum(*flat); err != nil {
		return err
	}
	off = 0
	for _, p := range params {
		be.Copy(p.Grad, (*flat).Slice(off, p.Grad.Len()))
		off += p.Grad.Len()
	}
	return be.Sync()
}

// CheckIdentical hashes every replica's adapter values and fails, naming
// the device and the first parameter that differs, unless they are all
// replica 0's bit for bit (under expert parallelism, the replicated
// parameters).
func (s *Set) CheckIdentical() error {
	want, err := s.reps[0].adapterHash()
	if err != nil {
		return err
	}
	if s.world != nil {
		return s.checkAcrossProcesses(want)
	}
	for i, rep := range s.reps[1:] {
		got, err := rep.adapterHash()
		if err != nil {
			return err
		}
		for k := range want {
			if got[k] != want[k] {
				return fmt.Errorf("replicas: device %d (%s) holds another adapter than device 0 after the update (parameter %s differs): the replicas' updates diverged", i+1, rep.Backend.Name(), s.reps[0].replicated()[k].Name)
			}
		}
	}
	return nil
}

// adapterHash is an FNV-1a hash of each replicated adapter parameter's
// float bits.
func (r *Replica) adapterHash() ([]uint64, error) {
	params := r.replicated()
	out := make([]uint64, len(params))
	for k, p := range params {
		v := make([]float32, p.Value.Len())
		r.Backend.Download(v, p.Value)
		if err := r.Backend.Sync(); err != nil {
			return nil, err
		}
		h := fnv.New64a()
		var b [4]byte
		for _, x := range v {
			u := math.Float32bits(x)
			b[0], b[1], b[2], b[3] = byte(u), byte(u>>8), byte(u>>16), byte(u>>24)
			h.Write(b[:])
		}
		out[k] = h.Sum64()
	}
	return out, nil
}

// checkAcrossProcesses is CheckIdentical for a job of several processes:
// every device's hashes are all-gathered (every device makes the call)
// and each must be rank 0's.
func (s *Set) checkAcrossProcesses(want []uint64) error {
	first, _ := s.world.first(len(s.reps))
	return s.each(func(i int, rep *Replica) error {
		h, err := rep.adapterHash()
		if err != nil {
			return err
		}
		all, err := gatherGob(rep.coll, rep.Backend, h)
		if err != nil || i != 0 {
			return err
		}
		for g, got := range all {
			for k := range want {
				if k >= len(got) || got[k] != all[0][k] {
					return fmt.Errorf("replicas: device %d of the job (this process's devices are %d…) holds another adapter than device 0 after the update (parameter %s differs): the replicas' updates diverged", g, first, s.reps[0].replicated()[k].Name)
				}
			}
		}
		return nil
	})
}
