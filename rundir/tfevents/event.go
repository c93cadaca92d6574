package tfevents

import (
	"sort"

	"github.com/grpo-dev/grpo/internal/protoenc"
)

// Field numbers of tensorflow/core/util/event.proto and
// tensorflow/core/framework/summary.proto.
const (
	eventWallTime    = 1 // double
	eventStep        = 2 // int64
	eventFileVersion = 3 // string
	eventSummary     = 5 // Summary
	eventSessionLog  = 6 // SessionLog

	summaryValue = 1 // repeated Summary.Value

	valueTag         = 1 // string
	valueSimpleValue = 2 // float

	sessionLogStatus = 1 // enum SessionStatus
	sessionLogMsg    = 3 // string
	sessionStart     = 1 // SessionLog.START
)

// fileVersion is the first event of every events file; TensorBoard reads
// "brain.Event:2" as the current format.
const fileVersion = "brain.Event:2"

func versionEvent(wall float64) []byte {
	var e protoenc.Buffer
	e.Double(eventWallTime, wall)
	e.String(eventFileVersion, fileVersion)
	return e.Bytes()
}

// scalarEvent is one Event with a Summary of simple_value scalars, tags in
// sorted order so the file is reproducible.
func scalarEvent(wall float64, step int64, scalars map[string]float64) []byte {
	tags := make([]string, 0, len(scalars))
	for k := range scalars {
		tags = append(tags, k)
	}
	sort.Strings(tags)
	var sum protoenc.Buffer
	for _, tag := range tags {
		var v protoenc.Buffer
		v.String(valueTag, tag)
		v.Float(valueSimpleValue, float32(scalars[tag]))
		sum.Message(summaryValue, &v)
	}
	var e protoenc.Buffer
	e.Double(eventWallTime, wall)
	e.Int64(eventStep, step)
	e.Message(eventSummary, &sum)
	return e.Bytes()
}

// startEvent is a SessionLog START at step: TensorBoard drops the events
// of step and later that earlier files hold, which is what a run resumed
// from a checkpoint needs (those steps are recomputed).
func startEvent(wall float64, step int64, msg string) []byte {
	var sl protoenc.Buffer
	sl.Int64(sessionLogStatus, sessionStart)
	sl.String(sessionLogMsg, msg)
	var e protoenc.Buffer
	e.Double(eventWallTime, wall)
	e.Int64(eventStep, step)
	e.Message(eventSessionLog, &sl)
	return e.Bytes()
}
