package wandb

import (
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpo-dev/grpo/internal/logread"
)

func envOf(kv map[string]string) Env { return func(k string) string { return kv[k] } }

// clock ticks a second per call, so _runtime and _timestamp are known.
func clock() func() time.Time {
	t := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	return func() time.Time { t = t.Add(time.Second); return t }
}

func writePNG(t *testing.T, path string) {
	img := image.NewRGBA(image.Rect(0, 0, 7, 3))
	img.Set(1, 1, color.White)
	f, _ := os.Create(path)
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// logSteps logs steps 1..n with rewards, an eval at step 0 and at step 2
// (which joins step 2's row), and finishes with the plot.
func logSteps(t *testing.T, r *Run, rewards []float64, plot string) {
	t.Helper()
	if err := r.Log(0, map[string]float64{"eval/reward": 0.05}); err != nil {
		t.Fatal(err)
	}
	for i, rw := range rewards {
		if err := r.Log(i+1, map[string]float64{"reward": rw, "loss": -rw}); err != nil {
			t.Fatal(err)
		}
		if i+1 == 2 {
			r.Log(2, map[string]float64{"eval/reward": 0.5})
		}
	}
	if err := r.Finish(0, plot); err != nil {
		t.Fatal(err)
	}
}

// checkOffline decodes the run's .wandb file with the independent reader
// and checks the layout `wandb sync` reads and every step's reward.
func checkOffline(t *testing.T, dir string, online bool, rewards []float64) []logread.WandbRecord {
	t.Helper()
	prefix := "offline-run-"
	if online {
		prefix = "run-"
	}
	m := regexp.MustCompile(`^` + prefix + `(\d{8}_\d{6})-([a-z0-9]{8})$`).FindStringSubmatch(filepath.Base(dir))
	if m == nil {
		t.Fatalf("run directory %s is not %s<YYYYMMDD_HHMMSS>-<id>", dir, prefix)
	}
	if _, err := time.Parse("20060102_150405", m[1]); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(dir)
	var logs []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".wandb") {
			logs = append(logs, e.Name())
		}
		if e.Name() == "wandb-metadata.json" {
			t.Error("wandb-metadata.json at the top makes wandb sync skip the directory as an old-format run")
		}
	}
	if len(logs) != 1 || logs[0] != "run-"+m[2]+".wandb" {
		t.Fatalf("wandb sync wants exactly run-<id>.wandb, found %v", logs)
	}
	recs, err := logread.ReadWandb(filepath.Join(dir, logs[0]))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	var steps []int64
	got := map[int64]string{}
	for i, r := range recs {
		if r.Num != int64(i+1) {
			t.Errorf("record %d has num %d", i, r.Num)
		}
		kinds = append(kinds, r.Kind)
		if r.Kind == "history" {
			steps = append(steps, r.Step)
			got[r.Step] = r.Items["reward"]
			if r.Items["_step"] != strconv.FormatInt(r.Step, 10) || r.Items["_runtime"] == "" || r.Items["_timestamp"] == "" {
				t.Errorf("history step %d lacks _step/_runtime/_timestamp: %v", r.Step, r.Items)
			}
		}
	}
	if recs[1].RunID != m[2] {
		t.Errorf("run record id %q, directory id %q", recs[1].RunID, m[2])
	}
	want := "header run history"
	for range rewards {
		want += " history"
	}
	want += " files summary exit final"
	if strings.Join(kinds, " ") != want {
		t.Fatalf("records %v, want %s", kinds, want)
	}
	for i, rw := range rewards {
		if v, err := strconv.ParseFloat(got[int64(i+1)], 64); err != nil || v != rw {
			t.Errorf("step %d reward %q, want %v", i+1, got[int64(i+1)], rw)
		}
	}
	if steps[0] != 0 || recs[2].Items["eval/reward"] != "0.05" || recs[4].Items["eval/reward"] != "0.5" {
		t.Errorf("eval rows: %v / %v", recs[2].Items, recs[4].Items)
	}
	sum := recs[len(recs)-3]
	var img map[string]any
	json.Unmarshal([]byte(sum.Items["rewards"]), &img)
	plotPath, _ := img["path"].(string)
	if img["_type"] != "image-file" || img["width"] != 7.0 || img["height"] != 3.0 || recs[len(recs)-4].Files[0] != plotPath {
		t.Errorf("summary plot %v, files %v", img, recs[len(recs)-4].Files)
	}
	if _, err := os.Stat(filepath.Join(dir, "files", plotPath)); err != nil {
		t.Errorf("plot not under files/: %v", err)
	}
	if sum.Items["reward"] != strconv.FormatFloat(rewards[len(rewards)-1], 'g', -1, 64) {
		t.Errorf("summary reward %q", sum.Items["reward"])
	}
	if recs[len(recs)-2].ExitCode != 0 {
		t.Errorf("exit code %d", recs[len(recs)-2].ExitCode)
	}
	return recs
}

func TestOfflineByWandbMode(t *testing.T) {
	root := t.TempDir()
	plot := filepath.Join(root, "rewards.png")
	writePNG(t, plot)
	r, line, err := Start(filepath.Join(root, "wandb"), Options{Project: "p", Entity: "e", Name: "n", Group: "g", Tags: []string{"a", "b"},
		Config: map[string]any{"max_steps": 3, "lora": map[string]any{"rank": 4}}, Host: "h",
		Env: envOf(map[string]string{"WANDB_MODE": "offline", "WANDB_API_KEY": "secret-key-123"}), Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "offline run at "+r.Dir()) || !strings.Contains(line, "because WANDB_MODE=offline") || !strings.Contains(line, "wandb sync "+r.Dir()) {
		t.Errorf("line %q", line)
	}
	rewards := []float64{0.25, 0.5, 0.125}
	logSteps(t, r, rewards, plot)
	recs := checkOffline(t, r.Dir(), false, rewards)
	run := recs[1]
	if run.Project != "p" || run.Entity != "e" || run.DisplayName != "n" || run.Group != "g" || strings.Join(run.Tags, ",") != "a,b" ||
		run.Items["max_steps"] != "3" || run.Items["lora"] != `{"rank":4}` {
		t.Errorf("run record %+v", run)
	}
}

func TestOfflineWithoutKey(t *testing.T) {
	root := t.TempDir()
	r, line, err := Start(root, Options{Project: "p", Env: envOf(map[string]string{"HOME": root}), Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "offline run at") || !strings.Contains(line, "no API key") {
		t.Errorf("line %q", line)
	}
	logSteps(t, r, []float64{1}, filepath.Join(root, "no-plot-yet.png"))
	// No plot: no files record, no image in the summary.
	recs, err := logread.ReadWandb(filepath.Join(r.Dir(), "run-"+r.ID()+".wandb"))
	if err != nil || recs[len(recs)-3].Kind != "summary" || recs[len(recs)-4].Kind != "history" {
		t.Fatalf("%v %+v", err, recs)
	}
}

func TestOfflineWhenHostUnreachable(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	root := t.TempDir()
	r, line, err := Start(root, Options{Project: "p", Timeout: 2 * time.Second,
		Env: envOf(map[string]string{"WANDB_API_KEY": "secret-key-123", "WANDB_BASE_URL": "http://" + addr}), Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "offline run at "+r.Dir()) || !strings.Contains(line, "http://"+addr+" is unreachable") {
		t.Errorf("line %q", line)
	}
	if strings.Contains(line, "secret-key-123") {
		t.Errorf("the key is in the line: %q", line)
	}
	if !strings.HasPrefix(filepath.Base(r.Dir()), "offline-run-") {
		t.Errorf("dir %s", r.Dir())
	}
	r.Finish(0, "")
}

func TestDisabled(t *testing.T) {
	r, line, err := Start(t.TempDir(), Options{Project: "p", Env: envOf(map[string]string{"WANDB_MODE": "disabled"})})
	if r != nil || err != nil || !strings.Contains(line, "off (WANDB_MODE=disabled)") {
		t.Errorf("%v %q %v", r, line, err)
	}
}

func TestConfigOfflineAndResumeKeepsID(t *testing.T) {
	root := t.TempDir()
	env := envOf(map[string]string{"WANDB_API_KEY": "k"})
	a, line, err := Start(root, Options{Project: "p", Offline: true, Env: env, Now: clock()})
	if err != nil || !strings.Contains(line, "because [wandb] offline = true") {
		t.Fatalf("%q %v", line, err)
	}
	a.Log(1, map[string]float64{"reward": 1})
	a.Finish(130, "")
	later := func() time.Time { return time.Date(2025, 3, 5, 0, 0, 0, 0, time.UTC) }
	b, _, err := Start(root, Options{Project: "p", Offline: true, Env: env, Now: later, Resumed: true, StartingStep: 2})
	if err != nil {
		t.Fatal(err)
	}
	b.Finish(0, "")
	if b.ID() != a.ID() || b.Dir() == a.Dir() {
		t.Fatalf("resumed id %s dir %s; first %s %s", b.ID(), b.Dir(), a.ID(), a.Dir())
	}
	ra, _ := logread.ReadWandb(filepath.Join(a.Dir(), "run-"+a.ID()+".wandb"))
	rb, _ := logread.ReadWandb(filepath.Join(b.Dir(), "run-"+b.ID()+".wandb"))
	if ra[len(ra)-2].ExitCode != 130 || !rb[1].Resumed || rb[1].StartingStep != 2 || ra[1].Resumed {
		t.Errorf("exit %d, resumed run %+v", ra[len(ra)-2].ExitCode, rb[1])
	}
}

func TestKeyFromNetrc(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine example.org login x password nope\nmachine api.wandb.ai\n  login user\n  password from-netrc\n"), 0o600)
	env := envOf(map[string]string{"HOME": home})
	if k := env.apiKey(DefaultBaseURL); k != "from-netrc" {
		t.Errorf("key %q", k)
	}
	if k := env.apiKey("https://wandb.corp.example"); k != "" {
		t.Errorf("key for another host %q", k)
	}
	if got := appURL(DefaultBaseURL); got != "https://wandb.ai" {
		t.Errorf("app url %s", got)
	}
}
