package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/grpo-dev/grpo/lora"
	"github.com/grpo-dev/grpo/model"
)

// Adapter files are read by the HTTP handler, never by the scheduler
// goroutine: a path a client names may be a FIFO (opening it blocks until
// a writer comes), /dev/zero (endless), or a huge file. Each file must be
// a regular file within its cap, read with a deadline; only the checked
// bytes reach the scheduler, which parses and uploads them.
const (
	// maxAdapterConfig bounds adapter_config.json: a few KB in practice,
	// more with per-module rank patterns of a large MoE.
	maxAdapterConfig = 16 << 20
	// adapterReaders is how many adapter loads read files at once, so
	// concurrent loads hold at most that many weight files in memory.
	adapterReaders = 2
	// defaultAdapterTimeout bounds a load's reading, waiting included.
	defaultAdapterTimeout = 60 * time.Second
)

// maxAdapterWeights is the largest adapter_model.safetensors that can make
// sense for m: a LoRA of rank min(in, out) on every weight matrix holds at
// most 2 values per model weight, 4 bytes each in F32 (the widest dtype
// lora reads), plus room for the header.
func maxAdapterWeights(m *model.Model) int64 {
	return 8*m.Config.ParamCount() + maxAdapterConfig
}

// readAdapter reads dir's config into *config, then its weights within
// what the config's rank allows for this model (lora.MaxWeightsBytes) and
// the model's cap: a 4-rank adapter's file has no business being 4 GB.
func (s *Server) readAdapter(dir string, config *[]byte) ([]byte, error) {
	cfgPath := filepath.Join(dir, lora.ConfigFileName)
	var err error
	if *config, err = readCapped(cfgPath, maxAdapterConfig); err != nil {
		return nil, err
	}
	limit, err := lora.MaxWeightsBytes(*config, s.m) // reads m.Config only
	if err != nil {
		return nil, fmt.Errorf("%s: %v", cfgPath, err)
	}
	return readCapped(filepath.Join(dir, lora.WeightsFileName), min(limit, s.maxAdapterWeights))
}

// adapterFiles are an adapter directory's checked contents.
type adapterFiles struct {
	dir             string
	config, weights []byte
}

// readAdapterFiles reads dir's two files within their caps, giving up when
// ctx ends or the server's timeout passes. A read that hangs (a stalled
// network mount) keeps its reader slot until it returns, so such reads
// cannot pile up memory; generation is never held up by them.
func (s *Server) readAdapterFiles(ctx context.Context, dir string) (*adapterFiles, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.AdapterTimeout)
	defer cancel()
	select {
	case s.adapterReaders <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("adapter loads are busy: %w", ctx.Err())
	}
	type result struct {
		files *adapterFiles
		err   error
	}
	done := make(chan result, 1)
	go func() {
		defer func() { <-s.adapterReaders }()
		f := &adapterFiles{dir: dir}
		var err error
		f.weights, err = s.readAdapter(dir, &f.config)
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.files, r.err
	case <-ctx.Done():
		return nil, fmt.Errorf("reading the adapter in %s took longer than %v", dir, s.cfg.AdapterTimeout)
	}
}

// readCapped reads a regular file of at most limit bytes. It opens without
// blocking (O_NONBLOCK: a FIFO opens at once) and judges the opened file
// itself, so a path swapped after a check cannot slip through.
func readCapped(path string, limit int64) ([]byte, error) {
	fh, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: not found; a LoRA adapter directory holds %s and %s (PEFT format)", path, lora.ConfigFileName, lora.WeightsFileName)
		}
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	switch {
	case err != nil:
		return nil, err
	case !st.Mode().IsRegular():
		return nil, fmt.Errorf("%s: is not a regular file (%v); an adapter's files must be plain files", path, st.Mode().Type())
	case st.Size() > limit:
		return nil, fmt.Errorf("%s: %d bytes exceeds the %d-byte limit for this model", path, st.Size(), limit)
	}
	// One more byte than the size tells a file that grew while read.
	data := make([]byte, st.Size()+1)
	n, err := io.ReadFull(fh, data)
	switch {
	case err == nil:
		return nil, fmt.Errorf("%s: grew while read; retry once it is written", path)
	case n != int(st.Size()):
		return nil, fmt.Errorf("%s: read %d of %d bytes (%v); retry once it is written", path, n, st.Size(), err)
	}
	data = data[:n]
	return data, nil
}
