package env

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const gsm8kDir = "../testdata/gsm8k"

func writeFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadJSONLReportsEveryBadLineAndLoadsNothing(t *testing.T) {
	p := writeFile(t, t.TempDir(), "d.jsonl", `{"question": "a", "answer": 1}

{"question": "b"
[1, 2]
{"question": "c", "answer": "3"} {"x": 1}
{"question": "d", "answer": 4}
`)
	rows, err := LoadJSONL(p)
	if err == nil {
		t.Fatalf("loaded %d rows from a file with bad lines", len(rows))
	}
	msg := err.Error()
	for _, want := range []string{p + ":3: not valid JSON", p + ":4: a JSON array, not an object", p + ":5: more than one JSON value", "3 of 5 lines are malformed", "nothing was loaded"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, ":1:") || strings.Contains(msg, ":6:") {
		t.Errorf("error blames a good line: %q", msg)
	}
}

func TestLoadJSONLMissingFileAndEmptyFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadRows(filepath.Join(dir, "nope.jsonl")); err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadRows(writeFile(t, dir, "e.jsonl", "\n\n")); err == nil || !strings.Contains(err.Error(), "no rows") {
		t.Errorf("empty file: %v", err)
	}
	if _, err := LoadRows(writeFile(t, dir, "d.csv", "a,b\n")); err == nil || !strings.Contains(err.Error(), "unknown dataset format") {
		t.Errorf("csv: %v", err)
	}
	if _, err := LoadRows(writeFile(t, dir, "bad.jsonl.gz", "not gzip")); err == nil || !strings.Contains(err.Error(), "not a gzip file") {
		t.Errorf("bad gzip: %v", err)
	}
}

func TestQAExamplesNamesRowAndField(t *testing.T) {
	p := writeFile(t, t.TempDir(), "d.jsonl", `{"question": "a", "answer": 1.50}
{"q": "b", "answer": "2"}
{"question": ["c"], "answer": "3"}
`)
	rows, err := LoadJSONL(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = QAExamples(rows, QAFields{Question: "question", Answer: "answer"}, "", nil)
	if err == nil {
		t.Fatal("no error for rows without a question")
	}
	for _, want := range []string{p + `:2: no field "question" (the row has "answer", "q")`, p + `:3: field "question" is a array`, "2 of 3 rows"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	exs, err := QAExamples(rows[:1], QAFields{Question: "question", Answer: "answer"}, "sys", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The number keeps its written form: "1.50", not "1.5".
	if exs[0].Answer != "1.50" || len(exs[0].Prompt) != 2 || exs[0].Prompt[0].Content != "sys" {
		t.Errorf("example = %+v", exs[0])
	}
}

// sample.parquet was written by hyparquet-writer (JavaScript) from the first
// 20 rows of test.jsonl.gz; both files must give the same rows.
func TestParquetMatchesJSONL(t *testing.T) {
	pq, err := LoadParquet(filepath.Join(gsm8kDir, "sample.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := LoadRows(filepath.Join(gsm8kDir, "test.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pq) != 20 || len(js) != 1319 {
		t.Fatalf("parquet has %d rows, jsonl %d; want 20 and 1319", len(pq), len(js))
	}
	for i, r := range pq {
		for _, f := range []string{"question", "answer"} {
			a, err1 := TextField(r, f)
			b, err2 := TextField(js[i], f)
			if err1 != nil || err2 != nil || a != b {
				t.Fatalf("row %d field %s: parquet %q (%v), jsonl %q (%v)", i, f, a, err1, b, err2)
			}
		}
		if idx, _ := TextField(r, "idx"); idx != strconv.Itoa(i) {
			t.Errorf("row %d idx = %q", i, idx)
		}
	}
}

func TestParquetCorruptFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(gsm8kDir, "sample.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := writeFile(t, dir, "trunc.parquet", string(b[:len(b)/2]))
	if _, err := LoadParquet(p); err == nil || !strings.Contains(err.Error(), "trunc.parquet") {
		t.Errorf("truncated parquet: %v", err)
	}
	// Garbage inside the data pages, footer intact.
	c := append([]byte(nil), b...)
	for i := 100; i < 2000; i++ {
		c[i] ^= 0x5a
	}
	p = writeFile(t, dir, "corrupt.parquet", string(c))
	if rows, err := LoadParquet(p); err == nil {
		// A codec may decode garbage without complaint; then the text
		// must at least differ from the original.
		if q, _ := TextField(rows[0], "question"); strings.HasPrefix(q, "Janet") {
			t.Errorf("corrupted file read as the original")
		}
	}
}

// TestLoadJSONLByteOrderMark: a JSONL file saved with a UTF-8 byte-order
// mark failed on line 1 with `invalid character 'ï'`; the mark is dropped,
// at the start of the file and where two such files were concatenated. A
// UTF-16 file is named as such.
func TestLoadJSONLByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	bom := "\xEF\xBB\xBF"
	rows, err := LoadJSONL(writeFile(t, dir, "bom.jsonl", bom+`{"question": "a", "answer": "1"}`+"\n"+bom+`{"question": "b", "answer": "2"}`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Fields["question"] != "a" || rows[1].Fields["answer"] != "2" {
		t.Fatalf("rows %+v", rows)
	}
	p := writeFile(t, dir, "utf16.jsonl", "\xFF\xFE{\x00}\x00\n\x00")
	if _, err := LoadJSONL(p); err == nil || !strings.Contains(err.Error(), p+": the file is UTF-16") || !strings.Contains(err.Error(), "save it as UTF-8") {
		t.Errorf("UTF-16 file: %v", err)
	}
}
