package hub

// FileProgress is how far the download of one file has come. Options.Progress
// hears one when the download starts (Done 0), again whenever bytes arrive
// (Done may also drop to 0 when a resume has to start over), and a last one
// with Finished set once the file is complete and verified. A download that
// fails gets no Finished report.
type FileProgress struct {
	File     string // the file's path in the repository
	Done     int64  // bytes of it in the cache so far
	Total    int64  // its size; -1 while the hub has not said
	Finished bool
}

// progressReporter reports one file's progress; with a nil report it does
// nothing, so the transfer code need not ask.
type progressReporter struct {
	report func(FileProgress)
	file   string
	done   int64
	total  int64
}

func (p *progressReporter) set(done int64) {
	p.done = done
	if p.report != nil {
		p.report(FileProgress{File: p.file, Done: p.done, Total: p.total})
	}
}

// Write counts bytes as they are written to the cache.
func (p *progressReporter) Write(b []byte) (int, error) {
	p.set(p.done + int64(len(b)))
	return len(b), nil
}

// finish reports the file complete at size bytes.
func (p *progressReporter) finish(size int64) {
	p.done, p.total = size, size
	if p.report != nil {
		p.report(FileProgress{File: p.file, Done: p.done, Total: p.total, Finished: true})
	}
}
