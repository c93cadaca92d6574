//go:build !cgo

package cpu

// Without cgo there are no C kernels: vecISAs is empty, vecLoad returns
// nil, and every op takes its plain-Go path (Backend.vec is nil), so the
// methods below are never reached.
type vecTable struct{ name string }

func vecISAs() []string { return nil }

func vecLoad(string, int) *vecTable { return nil }

const noVec = "cpu: C kernel called in a CGO_ENABLED=0 build"

func (*vecTable) exp(_, _ []float32)                                        { panic(noVec) }
func (*vecTable) expd(_, _ []float64)                                       { panic(noVec) }
func (*vecTable) sampleExps([]float64, []float32, float64, float64) float64 { panic(noVec) }
func (*vecTable) swiGLU(_, _, _ []float32)                                  { panic(noVec) }
func (*vecTable) swiGLUBackward(_, _, _, _, _ []float32)                    { panic(noVec) }
func (*vecTable) lseStats([]float32) (float32, float64, float64)            { panic(noVec) }
func (*vecTable) expScale(_, _ []float32, _ float32, _ float64)             { panic(noVec) }
func (*vecTable) softmaxRow([]float32) (float32, float64)                   { panic(noVec) }
func (*vecTable) expBelow([]float32, float64)                               { panic(noVec) }
func (*vecTable) add(_, _, _ []float32)                                     { panic(noVec) }
func (*vecTable) addBias(_, _ []float32, _ int)                             { panic(noVec) }
func (*vecTable) rmsNorm(_, _, _, _ []float32, _ int, _ float32)            { panic(noVec) }
func (*vecTable) rmsNormBackward(_, _, _, _, _ []float32, _ int, _ bool)    { panic(noVec) }
func (*vecTable) adamW(_, _, _, _ []float32, _, _, _, _, _, _, _ float64)   { panic(noVec) }
