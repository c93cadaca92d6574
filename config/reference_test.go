package config

import (
	"flag"
	"os"
	"sort"
	"strings"
	"testing"
)

var updateDoc = flag.Bool("update", false, "rewrite the generated part of docs/config.md")

const (
	docPath  = "../docs/config.md"
	docBegin = "<!-- BEGIN KEYS: generated from config/*.go by `go test ./config -run TestConfigDoc -update`; do not edit by hand -->\n"
	docEnd   = "<!-- END KEYS -->\n"
)

// TestConfigDoc: docs/config.md lists every key with the default the code
// has; edit the code (keyInfos, DefaultConfig) and rerun with -update.
func TestConfigDoc(t *testing.T) {
	doc, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, docBegin), strings.Index(s, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: missing the generated-keys markers", docPath)
	}
	want := s[:i+len(docBegin)] + Reference() + "\n" + s[j:]
	if *updateDoc {
		if err := os.WriteFile(docPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if s != want {
		t.Errorf("%s is out of date with the config code; run go test ./config -run TestConfigDoc -update", docPath)
	}
}

// TestConfigKeyInfos: every key of the Config tree is documented, and
// every documented key exists.
func TestConfigKeyInfos(t *testing.T) {
	keys := map[string]bool{}
	for _, p := range schema.KeyPaths() {
		keys[p] = true
		if _, ok := keyInfos[p]; !ok {
			t.Errorf("key %q has no keyInfos entry", p)
		}
	}
	var extra []string
	for p := range keyInfos {
		if !keys[p] {
			extra = append(extra, p)
		}
	}
	sort.Strings(extra)
	if len(extra) > 0 {
		t.Errorf("keyInfos documents keys the schema lacks: %v", extra)
	}
}

// TestConfigDocDefaults checks a few rows of the generated reference by
// hand, so a generator bug cannot pass by agreeing with itself.
func TestConfigDocDefaults(t *testing.T) {
	ref := Reference()
	for _, row := range []string{
		"| `batch_size` | integer | `128` |",
		"| `max_tokens` | integer | `1024` |",
		"| `temperature` | number | `1` |",
		"| `lr` | number | `0.0001` |",
		"| `betas` | array of 2 numbers | `[0.9, 0.999]` |",
		"| `rank` | integer | `16` |",
		"| `target_modules` | array of strings | `[\"q_proj\", \"k_proj\", \"v_proj\", \"o_proj\", \"gate_proj\", \"up_proj\", \"down_proj\"]` |",
		"| `loss_type` | string | `\"dapo\"` |",
		"| `weight` | number | 1 |",
		"| `device` | string | `\"cpu\"` |",
		"| `max_async_level` | integer | unset (0) | **Deprecated** (prime lab doctor: `max_async_level` is outdated; remove it from Lab configs.) How many optimiser steps",
		"| `max_inflight_rollouts` | integer | unset | **Ignored locally:** ",
		"### `[[env]]`",
		"### `[eval.sampling]`",
	} {
		if !strings.Contains(ref, row) {
			t.Errorf("reference lacks %q", row)
		}
	}
}
