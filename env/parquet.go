package env

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/parquet-go/parquet-go"
)

// LoadParquet reads every row of a Parquet file (as Hugging Face datasets
// store them: one flat record per row, strings, numbers and lists) into
// Rows keyed by column name. Compression codecs (snappy, zstd, gzip…)
// are handled by github.com/parquet-go/parquet-go.
func LoadParquet(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v; check the path", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %v", path, err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: not a readable Parquet file (%v); check that it is complete, or convert it to JSONL", path, err)
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	rows := make([]Row, 0, pf.NumRows())
	for i := 0; ; i++ {
		m := map[string]any{}
		if err := readParquetRow(r, &m); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: row %d: %v; the file may be truncated or use an unsupported type", path, i, err)
		}
		rows = append(rows, Row{Where: fmt.Sprintf("%s: row %d", path, i), Fields: m})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return rows, nil
}

// readParquetRow turns a panic of the reader on a corrupt file into an
// error, so a bad download cannot kill a run.
func readParquetRow(r *parquet.Reader, m *map[string]any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("corrupt data (%v)", p)
		}
	}()
	return r.Read(m)
}

func sortStrings(s []string) { sort.Strings(s) }
