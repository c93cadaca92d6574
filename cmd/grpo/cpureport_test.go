package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/grpo-dev/grpo/kernels/cpu"
)

func TestCPUReport(t *testing.T) {
	var buf bytes.Buffer
	cpuReport(&buf, "cuda", true)
	if buf.Len() != 0 {
		t.Errorf("cuda device: report %q, want nothing", buf.String())
	}
	cpuReport(&buf, "cpu", true)
	out := buf.String()
	if !strings.HasPrefix(out, "BLAS: ") || !strings.Contains(out, "elementwise kernels: "+cpu.New().KernelsName()) {
		t.Errorf("verbose report %q, want the BLAS line and the kernels in use", out)
	}
	buf.Reset()
	cpuReport(&buf, "cpu", false)
	if want := cpu.OpenBLASInfo().Warning; strings.TrimSpace(buf.String()) != want {
		t.Errorf("quiet report %q, want only the warning %q (OPENBLAS_CORETYPE=%q)", buf.String(), want, os.Getenv("OPENBLAS_CORETYPE"))
	}
}
