// Package estimate owns what a run will need, worked out before it
// starts: parameter counts, the memory the backend will hold (itemised by
// phase, from the sizes the code allocates), the device's free memory and
// whether the run fits, and the step time extrapolated from a short timed
// warm-up. It allocates nothing for the run itself; the warm-up's buffers
// are freed before it returns.
package estimate
