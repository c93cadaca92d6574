package model

import (
	"fmt"
	"math"

	"github.com/grpo-dev/grpo/kernels"
)

// The router (mlp.gate) of a sparse layer is frozen unless an adapter
// targets it (PEFT's target module "gate"); then its LoRA gets gradients
// from the routing weights and, with Trace.AuxCoef, from HF's
// load-balancing loss.

// RouterModule is the PEFT target-module name of the routers.
const RouterModule = "gate"

// RouterAdapter is an Adapter that also adapts the routers of sparse
// layers: logits = h·Routerᵀ + Scale·(h·Aᵀ)·Bᵀ, A rank × hidden and B
// nExperts × rank.
type RouterAdapter interface {
	Adapter
	RouterLoRA(layer int) *LoRA
}

func (m *Model) routerLoRA(layer int) *LoRA {
	if ra, ok := m.Adapter.(RouterAdapter); ok {
		return ra.RouterLoRA(layer)
	}
	return nil
}

// TrainsRouter reports whether the model's adapter adapts some router.
func (m *Model) TrainsRouter() bool {
	for l := range m.Config.NumLayers {
		if m.Config.IsSparse(l) && m.routerLoRA(l) != nil {
			return true
		}
	}
	return false
}

// routerForward writes layer l's router logits of h into s.logits.
func (m *Model) routerForward(l int, s *moeActs, h kernels.Buffer, n int) {
	be, c := m.Backend, m.Config
	hd, ne := c.HiddenSize, c.NumExperts
	// A router kept in f32 (a checkpoint that ships it so) beside a bf16
	// layer's h makes the logits an f32 product, as HF computes them.
	router := m.W.Layers[l].MoE.Router
	be.MatMul(s.logits, h, router, n, ne, hd, false, true, 1, 0)
	if b := m.W.Layers[l].MoE.LogitBias; b != nil {
		be.AddBias(s.logits, b, n, ne)
	}
	if lr := m.routerLoRA(l); lr != nil {
		be.LoRAShrink(s.routerXA, h, lr.A, n, hd, lr.Rank)
		be.LoRAExpand(s.routerXA, []kernels.LoRAPart{lr.part(ne, s.logits, ne, 0)}, n)
	}
}

// routerBackward adds the gradient through the router of dLogits (n ×
// nExperts) into dh, and into the router adapter's DA and DB; dyB (n ×
// rank, nil without a router adapter) receives Scale·dLogits·B.
func (m *Model) routerBackward(l int, s *moeActs, dh, dLogits, h, dyB kernels.Buffer, n int) {
	be, c := m.Backend, m.Config
	hd, ne := c.HiddenSize, c.NumExperts
	be.MatMul(dh, dLogits, m.W.Layers[l].MoE.Router, n, hd, ne, false, false, 1, 1)
	if lr := m.routerLoRA(l); lr != nil {
		be.LoRAExpandBackward(dyB, s.routerXA, []kernels.LoRAPart{lr.part(ne, dLogits, ne, 0)}, n)
		be.LoRAShrinkBackward(dh, lr.DA, dyB, h, lr.A, n, hd, lr.Rank)
	}
}

// loadBalance is HF's load_balancing_loss_func over the trace's tokens and
// sparse layers (their router logits concatenated): with f_e the fraction
// of (layer, token) assignments routed to expert e (Σ_e f_e = top-k) and
// P_e the mean router probability of e,
//
//	aux = nExperts · Σ_e f_e · P_e,
//
// and, the routing being discrete, ∂aux/∂p_{l,t,e} = nExperts·f_e/(S·n),
// the same for every token: grad. It reads the offsets and logits back to
// the host.
func (tr *Trace) loadBalance() (aux float64, grad []float32, err error) {
	c, be := tr.m.Config, tr.m.Backend
	if c.Arch().SigmoidRouter {
		// HF's loss is over softmax probabilities; GLM-4.5 balances its
		// load with the correction bias instead, and trains with none.
		return 0, nil, fmt.Errorf("load-balancing loss: %s routes by sigmoid scores and has no softmax load-balancing loss; set the auxiliary coefficient to 0", c.Arch().Name)
	}
	ne, n := c.NumExperts, tr.n
	counts := make([]float64, ne)
	probs := make([]float64, ne)
	off := make([]int32, ne+1)
	logits := make([]float32, n*ne)
	layers := 0
	for _, s := range tr.layers {
		if s.moe == nil {
			continue
		}
		if s.moe.logits == nil {
			// A checkpointed layer keeps them only when the model
			// trains a router (newMoEActs).
			return 0, nil, fmt.Errorf("load-balancing loss: the trace kept no router logits (the model adapts no router; Trace.AuxCoef is for one that does)")
		}
		layers++
		be.DownloadI32(off, s.moe.offsets)
		be.Download(logits, s.moe.logits)
		if err := be.Sync(); err != nil {
			return 0, nil, fmt.Errorf("load-balancing loss on %s: %w", be.Name(), err)
		}
		for e := range ne {
			counts[e] += float64(off[e+1] - off[e])
		}
		for t := range n {
			row := logits[t*ne : (t+1)*ne]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = math.Max(mx, float64(v))
			}
			sum := 0.0
			for _, v := range row {
				sum += math.Exp(float64(v) - mx)
			}
			for e, v := range row {
				probs[e] += math.Exp(float64(v)-mx) / sum
			}
		}
	}
	total := float64(layers * n)
	grad = make([]float32, ne)
	for e := range ne {
		f, p := counts[e]/total, probs[e]/total
		aux += float64(ne) * f * p
		grad[e] = float32(float64(ne) * f / total)
	}
	return aux, grad, nil
}
