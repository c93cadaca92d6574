package main

import (
	"fmt"
	"io"
	"time"

	"github.com/grpo-dev/grpo/model/hub"
	"github.com/schollz/progressbar/v3"
)

// downloadBars draws one progress bar per downloaded file on w, from the
// reports of hub.Options.Progress (files download one at a time).
type downloadBars struct {
	w    io.Writer
	file string
	bar  *progressbar.ProgressBar
}

// newDownloadProgress returns the hub.Options.Progress that draws on w.
func newDownloadProgress(w io.Writer) func(hub.FileProgress) {
	return (&downloadBars{w: w}).report
}

func (d *downloadBars) report(p hub.FileProgress) {
	if d.bar == nil || p.File != d.file {
		// A new file's first report (at 0 bytes) only makes its bar; a
		// file whose download failed keeps its bar as it stopped.
		d.file = p.File
		d.bar = progressbar.NewOptions64(p.Total,
			progressbar.OptionSetWriter(d.w),
			progressbar.OptionSetDescription(p.File),
			progressbar.OptionShowBytes(true),
			progressbar.OptionShowCount(),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(d.w) }),
		)
		if !p.Finished {
			return
		}
	}
	if p.Finished {
		_ = d.bar.Finish()
		d.bar = nil
		return
	}
	_ = d.bar.Set64(p.Done)
}
