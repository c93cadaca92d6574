package wandb

import (
	"encoding/json"
	"sort"
	"time"

	"github.com/grpo-dev/grpo/internal/protoenc"
)

// Field numbers of wandb/proto/wandb_internal.proto (message Record and
// the record types the trainer writes). Records are persistent on disk,
// so W&B does not renumber them.
const (
	recNum     = 1
	recHistory = 2
	recSummary = 3
	recConfig  = 5
	recFiles   = 6
	recRun     = 17
	recExit    = 18
	recFinal   = 20
	recHeader  = 21

	// RunRecord
	runID           = 1
	runEntity       = 2
	runProject      = 3
	runConfig       = 4
	runGroup        = 6
	runDisplayName  = 8
	runTags         = 10
	runHost         = 13
	runStartingStep = 14
	runStartTime    = 17
	runResumed      = 18

	// HistoryRecord, SummaryRecord (update), ConfigRecord (update) all
	// hold repeated items {key = 1, value_json = 16} in field 1.
	itemsField    = 1
	itemKey       = 1
	itemValueJSON = 16
	historyStep   = 2 // HistoryRecord.step: HistoryStep{num = 1}

	// FilesRecord{files = 1: FilesItem{path = 1, policy = 2, type = 3}}
	filesItems  = 1
	filePath    = 1
	filePolicy  = 2
	fileType    = 3
	policyNow   = 0
	policyEnd   = 1
	typeWandb   = 1
	typeMedia   = 2
	exitCode    = 1 // RunExitRecord
	exitRuntime = 2

	// HeaderRecord{version_info = 1: VersionInfo{producer = 1, min_consumer = 2}}
	headerVersionInfo = 1
	versionProducer   = 1
)

// RunInfo is what the run record says about the run.
type RunInfo struct {
	ID, Entity, Project, Group, DisplayName, Host string
	Tags                                          []string
	Config                                        map[string]any
	Start                                         time.Time
	// StartingStep and Resumed are set for a run resumed from a checkpoint.
	StartingStep int
	Resumed      bool
}

func items(field int, kv map[string]any) *protoenc.Buffer {
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var m protoenc.Buffer
	for _, k := range keys {
		v, err := json.Marshal(kv[k])
		if err != nil {
			continue // a value JSON cannot hold (NaN) is left out, as metrics.jsonl does
		}
		var it protoenc.Buffer
		it.String(itemKey, k)
		it.String(itemValueJSON, string(v))
		m.Message(field, &it)
	}
	return &m
}

func record(num int64, field int, body *protoenc.Buffer) []byte {
	var r protoenc.Buffer
	r.Int64(recNum, num)
	r.Message(field, body)
	return r.Bytes()
}

func headerRecord(num int64, producer string) []byte {
	var vi, h protoenc.Buffer
	vi.String(versionProducer, producer)
	h.Message(headerVersionInfo, &vi)
	return record(num, recHeader, &h)
}

func runRecord(num int64, ri RunInfo) []byte {
	var r protoenc.Buffer
	r.String(runID, ri.ID)
	r.String(runEntity, ri.Entity)
	r.String(runProject, ri.Project)
	r.Message(runConfig, items(itemsField, ri.Config))
	r.String(runGroup, ri.Group)
	r.String(runDisplayName, ri.DisplayName)
	for _, t := range ri.Tags {
		r.Element(runTags, t)
	}
	r.String(runHost, ri.Host)
	r.Int64(runStartingStep, int64(ri.StartingStep))
	var ts protoenc.Buffer // google.protobuf.Timestamp{seconds = 1, nanos = 2}
	ts.Int64(1, ri.Start.Unix())
	ts.Int64(2, int64(ri.Start.Nanosecond()))
	r.Message(runStartTime, &ts)
	r.Bool(runResumed, ri.Resumed)
	return record(num, recRun, &r)
}

func historyRecord(num int64, step int, row map[string]any) []byte {
	h := items(itemsField, row)
	var st protoenc.Buffer
	st.Int64(1, int64(step))
	h.Message(historyStep, &st)
	return record(num, recHistory, h)
}

func summaryRecord(num int64, kv map[string]any) []byte {
	return record(num, recSummary, items(itemsField, kv))
}

func configRecord(num int64, kv map[string]any) []byte {
	return record(num, recConfig, items(itemsField, kv))
}

// filesRecord names files under the run's files/ directory for upload;
// media (the reward plot) goes now, the summary file at the end.
func filesRecord(num int64, path string, media bool) []byte {
	var it, f protoenc.Buffer
	it.String(filePath, path)
	if media {
		it.Int64(filePolicy, policyNow)
		it.Int64(fileType, typeMedia)
	} else {
		it.Int64(filePolicy, policyEnd)
		it.Int64(fileType, typeWandb)
	}
	f.Message(filesItems, &it)
	return record(num, recFiles, &f)
}

func exitRecord(num int64, code int, runtime time.Duration) []byte {
	var e protoenc.Buffer
	e.Int64(exitCode, int64(code))
	e.Int64(exitRuntime, int64(runtime/time.Second))
	return record(num, recExit, &e)
}

func finalRecord(num int64) []byte {
	return record(num, recFinal, &protoenc.Buffer{})
}
