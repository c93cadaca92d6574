package sampler

// Expert routing record (mixture-of-experts models, Config.RecordExperts):
// every Forward call records which experts each of its tokens was routed
// to in each sparse layer (model.Batch.RecordExperts), as does a static
// decode step (model.Decoder.StepRecording, static.go), and each sequence
// keeps the record of its cached tokens, so a trainer can replay the
// behaviour policy's routing (loss.Sample.Experts). The record is k int32
// per token per sparse layer: 384 for Qwen3-30B-A3B, on the host.
//
// A StartGroup child that forks its group's cached prompt computes none of
// the forked positions: its record of them is a copy of the source's
// (group.go), taken at the fork, before it records any token of its own,
// so every sequence's record covers all its cached tokens.

// span is one sequence's share of a Forward call's batch.
type span struct {
	q *Seq
	n int
}

// recordingRouting reports whether the sampler records expert routing (in
// Forward calls and static steps alike).
func (s *Sampler) recordingRouting() bool {
	return s.cfg.RecordExperts && s.m.Config.SparseLayers() > 0
}

// prepareRecord points the batch's RecordExperts at the reusable host
// buffer sized for its tokens (nil when not recording).
func (s *Sampler) prepareRecord() {
	b := &s.batch
	b.RecordExperts = nil
	if !s.recordingRouting() {
		return
	}
	n := s.m.Config.RoutingLen(b.Len())
	if cap(s.record) < n {
		s.record = make([]int32, n)
	}
	b.RecordExperts = s.record[:n]
}

// distributeRecord appends each sequence's part of the batch's record to
// its own, in the batch's order.
func (s *Sampler) distributeRecord() {
	rec := s.batch.RecordExperts
	if rec == nil {
		return
	}
	per := s.m.Config.RoutingLen(1)
	off := 0
	for _, sp := range s.spans {
		sp.q.experts = append(sp.q.experts, rec[off*per:(off+sp.n)*per]...)
		off += sp.n
	}
}

// Experts is the routing recorded for the sequence's cached tokens (all
// but the last token generated, which no Forward has read yet): k experts
// per token per sparse layer, in model.Batch.Experts' layout; nil unless
// the sampler records (Config.RecordExperts) a mixture-of-experts model.
func (q *Seq) Experts() []int32 { return q.experts }
