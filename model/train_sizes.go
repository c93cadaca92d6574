package model

// The sizes of what a training forward and backward allocate, summed from
// the very buffer lists the allocators allocate from (bufSpecs), for the
// memory estimate, which prices a run before there is a Model: it passes
// the adapter's shape (UniformAdapterShape) and keeps only its own
// assumptions about the batch (its tokens, rows and sequences).

// TrainingActBytes is layer l's own activations of a training trace of n
// tokens under the adapter ad and policy p (none, swiglu or selective):
// kept, what the trace keeps (trainingActs), and dropped, what the
// backward recomputes (allocDropped). A sparse layer's experts are not
// included.
func (c *Config) TrainingActBytes(l, n int, ad AdapterShape, p Recompute) (kept, dropped int64) {
	var s layerActs
	kept = c.trainingActSpecs(&s, l, n, &ad, p).bytes()
	return kept, c.droppedSpecs(&s, l, n, p).bytes()
}
