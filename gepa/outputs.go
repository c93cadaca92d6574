package gepa

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/grpo-dev/grpo/internal/atomicfile"
	"github.com/grpo-dev/grpo/rundir"
)

// The output files of a run directory.
const (
	PromptFile   = "system_prompt.txt"     // the best candidate by mean validation score, exactly (no newline added)
	ResultsFile  = "results.jsonl"         // one Record per iteration
	FrontierFile = "pareto_frontier.jsonl" // one row per validation instance
	MetadataFile = "metadata.json"         // the run's settings, budget, pool and best
	PlotFile     = "best_score.png"        // the best score after each iteration
)

type outputs struct{ dir string }

// appendResult appends one row to results.jsonl and syncs it.
func (w *outputs) appendResult(rec Record) error {
	f, err := os.OpenFile(filepath.Join(w.dir, ResultsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	line, err := json.Marshal(rec)
	if err == nil {
		_, err = f.Write(append(line, '\n'))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", ResultsFile, err)
	}
	return nil
}

// truncateResults drops the rows after iteration last (a row written
// before a crash stopped the state's save; -1 drops all): the resumed run
// writes them again.
func (w *outputs) truncateResults(last int) error {
	path := filepath.Join(w.dir, ResultsFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var keep bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	for sc.Scan() {
		var r struct{ Iteration *int }
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Iteration == nil || *r.Iteration > last {
			continue // a torn last line, or a row to redo
		}
		keep.Write(sc.Bytes())
		keep.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if keep.Len() == len(data) {
		return nil
	}
	return atomicfile.WriteFile(path, keep.Bytes(), 0o644)
}

// frontierRow is one validation instance of pareto_frontier.jsonl.
type frontierRow struct {
	ValIndex   int     `json:"val_index"`
	BestScore  float64 `json:"best_score"`
	Candidates []int   `json:"candidates"`
}

// writeSnapshot rewrites the files that describe the pool as it stands,
// each atomically: the metadata, and when the pool changed (grown is
// true: a candidate was accepted, or the run ends) the best prompt, the
// fronts and the plot.
func (w *outputs) writeSnapshot(st *state, o Options, stop string, grown bool) error {
	if err := w.writeMetadata(st, o, stop); err != nil {
		return err
	}
	if !grown {
		return nil
	}
	best := st.Pool[bestCandidate(st.Pool)]
	if err := atomicfile.WriteFile(filepath.Join(w.dir, PromptFile), []byte(best.Text), 0o644); err != nil {
		return fmt.Errorf("%s: %w", PromptFile, err)
	}
	var b bytes.Buffer
	for i, f := range Fronts(st.Pool) {
		line, _ := json.Marshal(frontierRow{ValIndex: i, BestScore: st.Pool[f[0]].ValScores[i], Candidates: f})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := atomicfile.WriteFile(filepath.Join(w.dir, FrontierFile), b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("%s: %w", FrontierFile, err)
	}
	its, scores := make([]int, len(st.History)), make([]float64, len(st.History))
	for i, h := range st.History {
		its[i], scores[i] = h.Iteration, h.BestScore
	}
	if err := rundir.PlotBestScore(filepath.Join(w.dir, PlotFile), its, scores); err != nil {
		return fmt.Errorf("%s: %w", PlotFile, err)
	}
	return nil
}

// candidateInfo is a candidate as metadata.json lists it.
type candidateInfo struct {
	Candidate
	ValScore float64 `json:"val_score"`
	// Fronts counts the validation instances on whose front it sits.
	Fronts int `json:"fronts"`
}

// failedPrefix starts the stop reason of a run that ended with an error:
// metadata.json's status says "failed: …" then, not "running".
const failedPrefix = "failed: "

func (w *outputs) writeMetadata(st *state, o Options, stop string) error {
	fronts := Fronts(st.Pool)
	cands := make([]candidateInfo, len(st.Pool))
	for i, c := range st.Pool {
		cands[i] = candidateInfo{Candidate: c, ValScore: c.Mean()}
	}
	for _, f := range fronts {
		for _, c := range f {
			cands[c].Fronts++
		}
	}
	best := bestCandidate(st.Pool)
	status := "running"
	switch {
	case strings.HasPrefix(stop, failedPrefix):
		status = stop
	case stop != "":
		status = "stopped: " + stop
	}
	meta := map[string]any{
		"settings":       st.Settings,
		"status":         status,
		"iterations":     st.Iteration,
		"calls":          st.Calls,
		"max_calls":      o.MaxCalls,
		"minibatch_size": o.MinibatchSize,
		"seed":           o.Seed,
		"num_train":      st.Batches.N,
		"num_val":        len(st.Pool[0].ValScores),
		"best_candidate": best,
		"best_score":     st.Pool[best].Mean(),
		"seed_score":     st.Pool[0].Mean(),
		"merges_tried":   st.MergesTried,
		"candidates":     cands,
		"updated":        time.Now().UTC().Format(time.RFC3339),
	}
	data, err := json.MarshalIndent(meta, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(w.dir, MetadataFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("%s: %w", MetadataFile, err)
	}
	return nil
}
