package safetensors

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

// File is one opened safetensors file.
type File struct {
	path     string
	release  func() error // unmaps; nil for in-memory data
	tensors  map[string]Tensor
	names    []string
	metadata map[string]string
}

// Open maps path read-only (falling back to reading it into memory where
// mapping fails) and validates its header.
func Open(path string) (*File, error) {
	data, release, err := load(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(path, data)
	if err != nil {
		if release != nil {
			release()
		}
		return nil, err
	}
	f.release = release
	return f, nil
}

// Parse validates the safetensors bytes in data; name only labels errors.
// The returned File's tensors alias data.
func Parse(name string, data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("%s: file is %d bytes, shorter than the 8-byte header length (truncated or not a safetensors file)", name, len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	rest := uint64(len(data) - 8)
	if n > maxHeaderSize {
		return nil, fmt.Errorf("%s: header length %d exceeds the %d-byte limit (corrupt or not a safetensors file)", name, n, maxHeaderSize)
	}
	if n > rest {
		return nil, fmt.Errorf("%s: header length %d runs past the end of the file (%d bytes after the length field; truncated?)", name, n, rest)
	}
	body := data[8+n:]
	entries, metadata, err := parseHeader(name, data[8:8+n], uint64(len(body)))
	if err != nil {
		return nil, err
	}
	f := &File{path: name, tensors: make(map[string]Tensor, len(entries)), metadata: metadata}
	for _, e := range entries {
		// Cap the capacity so an append to Bytes() can never spill into
		// the next tensor.
		f.tensors[e.name] = Tensor{Name: e.name, DType: e.dtype, Shape: e.shape, data: body[e.begin:e.end:e.end]}
		f.names = append(f.names, e.name)
	}
	sort.Strings(f.names)
	return f, nil
}

// Path is the path the file was opened from.
func (f *File) Path() string { return f.path }

// Names lists the tensor names, sorted.
func (f *File) Names() []string { return append([]string(nil), f.names...) }

// Tensor looks a tensor up by name.
func (f *File) Tensor(name string) (Tensor, bool) {
	t, ok := f.tensors[name]
	return t, ok
}

// Metadata is the header's __metadata__ map (nil when absent).
func (f *File) Metadata() map[string]string { return f.metadata }

// Close releases the mapping; tensors from f must not be used afterwards.
func (f *File) Close() error {
	if f.release == nil {
		return nil
	}
	r := f.release
	f.release = nil
	if err := r(); err != nil {
		return fmt.Errorf("%s: unmap: %v", f.path, err)
	}
	return nil
}

// load returns the file's bytes, mapped where possible.
func load(path string) (data []byte, release func() error, err error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err // *PathError already names the file and cause
	}
	defer fh.Close() // a mapping outlives its descriptor
	st, err := fh.Stat()
	if err != nil {
		return nil, nil, err
	}
	if st.IsDir() {
		return nil, nil, fmt.Errorf("%s: is a directory, want a .safetensors file (use OpenDir for a model directory)", path)
	}
	size := st.Size()
	if size < 8 {
		return nil, nil, fmt.Errorf("%s: file is %d bytes, shorter than the 8-byte header length (truncated or not a safetensors file)", path, size)
	}
	if int64(int(size)) != size {
		return nil, nil, fmt.Errorf("%s: file of %d bytes does not fit in this process's address space", path, size)
	}
	if data, release, err := mmapFile(fh, int(size)); err == nil {
		return data, release, nil
	}
	data = make([]byte, size)
	if _, err := fh.ReadAt(data, 0); err != nil {
		return nil, nil, fmt.Errorf("%s: read: %v", path, err)
	}
	return data, nil, nil
}
