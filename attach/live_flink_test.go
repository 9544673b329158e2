package attach_test

// A live Apache Flink for attach: flinkref (the Maven module beside this
// package) starts a MiniCluster whose REST API listens on 127.0.0.1, runs a
// keyed word count with checkpoints, and says which key-group range each
// keyed subtask's state backend was given. `statelab attach --once --json`
// is then checked against Flink's REST API and against those ranges.
//
// Skipped with a message when java or mvn is missing; FLINK=1 (CI) makes a
// missing tool a failure.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

func requireFlinkTools(t *testing.T) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("the live attach test needs %s on PATH to run Apache Flink (flinkref/); install a JDK 17 and Maven 3.8+", strings.Join(missing, " and "))
	if os.Getenv("FLINK") == "1" {
		t.Fatal(msg + " (FLINK=1 requires them)")
	}
	t.Skip(msg + "; skipped (set FLINK=1 to require them)")
}

func flinkrefUpToDate(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "target", "classpath.txt"))
	if err != nil {
		return false
	}
	newer := false
	check := func(p string) {
		if fi, err := os.Stat(p); err == nil && fi.ModTime().After(st.ModTime()) {
			newer = true
		}
	}
	check(filepath.Join(dir, "pom.xml"))
	_ = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			check(p)
		}
		return nil
	})
	return !newer
}

type liveFlink struct {
	Rest      string `json:"rest"`
	Job       string `json:"job"`
	KeyGroups map[string][]struct {
		Subtask int `json:"subtask"`
		Start   int `json:"start"`
		End     int `json:"end"`
	} `json:"keyGroups"`
}

// startLiveFlink runs flinkref serve with a word count (source 2, tokenizer 2,
// count 3 keyed by word, sink 2) checkpointing every 200 ms.
func startLiveFlink(t *testing.T) *liveFlink {
	t.Helper()
	requireFlinkTools(t)
	root := repoRoot()
	pom := filepath.Join(root, "flinkref", "pom.xml")
	// Maven runs only when the build is older than a source (.ci/run builds
	// first): the conformance tests may be reading the same target/ now.
	if !flinkrefUpToDate(filepath.Join(root, "flinkref")) {
		if out, err := exec.Command("mvn", "-q", "-B", "-f", pom, "package", "-DskipTests").CombinedOutput(); err != nil {
			t.Fatalf("build flinkref: %v\n%s", err, out)
		}
		now := time.Now() // Maven may leave an unchanged classpath.txt as it was
		_ = os.Chtimes(filepath.Join(root, "flinkref", "target", "classpath.txt"), now, now)
	}
	cp, err := os.ReadFile(filepath.Join(root, "flinkref", "target", "classpath.txt"))
	require.NoError(t, err)
	dir := t.TempDir()
	var parts [2][]map[string]any
	words := strings.Fields("flink state stream key group barrier checkpoint savepoint window event time watermark")
	for i := range 200 {
		line := words[i%len(words)] + " " + words[(i*7)%len(words)]
		parts[i%2] = append(parts[i%2], map[string]any{"text": line, "ts": i})
	}
	input := filepath.Join(dir, "input.json")
	writeJSON(t, input, map[string]any{"sources": map[string]any{"source": parts}})
	spec := map[string]any{
		"name": "live word count",
		"operators": []any{
			map[string]any{"id": "source", "kind": "source", "parallelism": 2, "options": map[string]any{"partitions": 2}},
			map[string]any{"id": "tokenizer", "kind": "tokenizer", "parallelism": 2},
			map[string]any{"id": "count", "kind": "count", "parallelism": 3},
			map[string]any{"id": "sink", "kind": "sink", "parallelism": 2},
		},
		"edges": []any{
			map[string]any{"from": "source", "to": "tokenizer", "partitioner": "forward"},
			map[string]any{"from": "tokenizer", "to": "count", "partitioner": "hash"},
			map[string]any{"from": "count", "to": "sink", "partitioner": "rebalance"},
		},
		"checkpointing": map[string]any{"interval": "200ms"},
		// Each operator its own JobVertex (the page shows four); a spec
		// without the field chains, as Flink's default does.
		"chaining": false,
	}
	scenario := filepath.Join(dir, "serve.json")
	writeJSON(t, scenario, map[string]any{"name": "live", "job": spec, "input": input, "slotsPerTaskManager": 4})

	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "java", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", filepath.Join(root, "flinkref", "target", "classes")+string(os.PathListSeparator)+strings.TrimSpace(string(cp)),
		"org.statelab.flinkref.Main", "serve", scenario)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		stdin.Close() // flinkref stops its MiniCluster when stdin closes
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cancel()
			<-done
		}
		cancel()
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "{") {
				lines <- sc.Text()
				break
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case l := <-lines:
		var lf liveFlink
		require.NoError(t, json.Unmarshal([]byte(l), &lf), l)
		return &lf
	case <-time.After(4 * time.Minute):
		t.Fatalf("flinkref serve did not report a running job in 4 minutes; its stderr:\n%s", stderr.String())
	}
	return nil
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(v), url)
}

type restCounts struct {
	Counts struct {
		Completed int64 `json:"completed"`
		Failed    int64 `json:"failed"`
		Restored  int64 `json:"restored"`
	} `json:"counts"`
}

func TestAttachLiveFlink(t *testing.T) {
	lf := startLiveFlink(t)
	base := strings.TrimRight(lf.Rest, "/")
	t.Logf("Flink's REST API at %s, job %s", base, lf.Job)

	// Wait for a few completed checkpoints so the counts are not all zero.
	var before restCounts
	deadline := time.Now().Add(2 * time.Minute)
	for {
		getJSON(t, base+"/jobs/"+lf.Job+"/checkpoints", &before)
		if before.Counts.Completed >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.GreaterOrEqual(t, before.Counts.Completed, int64(2), "Flink completed no checkpoints in 2 minutes")

	bin := filepath.Join(t.TempDir(), "statelab")
	build := exec.Command("go", "build", "-o", bin, "./cmd/statelab")
	build.Dir = repoRoot()
	out, err := build.CombinedOutput()
	require.NoError(t, err, string(out))
	attachCmd := exec.Command(bin, "attach", "--flink", base, "--once", "--json")
	var stderr strings.Builder
	attachCmd.Stderr = &stderr
	doc, err := attachCmd.Output()
	require.NoError(t, err, "statelab attach: %s", stderr.String())

	var after restCounts
	getJSON(t, base+"/jobs/"+lf.Job+"/checkpoints", &after)

	var got struct {
		Jobs []struct {
			ID       string `json:"id"`
			Name     string `json:"name"`
			Vertices []struct {
				ID             string `json:"id"`
				Name           string `json:"name"`
				Parallelism    int    `json:"parallelism"`
				MaxParallelism int    `json:"maxParallelism"`
				Keyed          bool   `json:"keyed"`
				KeyGroups      []struct {
					Subtask, Start, End int
				} `json:"keyGroups"`
			} `json:"vertices"`
			Checkpoints struct {
				Completed, Failed, Restored int64
			} `json:"checkpoints"`
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal(doc, &got), string(doc))
	require.Len(t, got.Jobs, 1, string(doc))
	job := got.Jobs[0]
	require.Equal(t, lf.Job, job.ID)

	// What Flink's REST API says about the job and its plan.
	var details struct {
		Name     string `json:"name"`
		Vertices []struct {
			ID             string `json:"id"`
			Name           string `json:"name"`
			Parallelism    int    `json:"parallelism"`
			MaxParallelism int    `json:"maxParallelism"`
		} `json:"vertices"`
	}
	getJSON(t, base+"/jobs/"+lf.Job, &details)
	var plan struct {
		Plan struct {
			Nodes []struct {
				ID     string `json:"id"`
				Inputs []struct {
					ShipStrategy string `json:"ship_strategy"`
				} `json:"inputs"`
			} `json:"nodes"`
		} `json:"plan"`
	}
	getJSON(t, base+"/jobs/"+lf.Job+"/plan", &plan)
	hashIn := map[string]bool{}
	for _, n := range plan.Plan.Nodes {
		for _, in := range n.Inputs {
			if in.ShipStrategy == "HASH" {
				hashIn[n.ID] = true
			}
		}
	}
	require.Equal(t, details.Name, job.Name)
	require.Len(t, job.Vertices, len(details.Vertices))
	keyed := 0
	for i, v := range details.Vertices {
		g := job.Vertices[i]
		require.Equal(t, v.ID, g.ID)
		require.Equal(t, v.Name, g.Name)
		require.Equal(t, v.Parallelism, g.Parallelism, v.Name)
		require.Equal(t, v.MaxParallelism, g.MaxParallelism, v.Name)
		require.Equal(t, hashIn[v.ID], g.Keyed, "%s: keyed when the plan has a HASH input", v.Name)
		if !g.Keyed {
			require.Empty(t, g.KeyGroups, v.Name)
			continue
		}
		keyed++
		// The ranges StateLab computes are the ones Flink's keyed state
		// backends were given (reported by the count operator from inside).
		want := lf.KeyGroups["count"]
		require.Len(t, want, v.Parallelism, "flinkref reported every count subtask's range")
		require.Len(t, g.KeyGroups, len(want), v.Name)
		for k, r := range want {
			require.Equal(t, [3]int{r.Subtask, r.Start, r.End}, [3]int{g.KeyGroups[k].Subtask, g.KeyGroups[k].Start, g.KeyGroups[k].End}, "%s subtask %d", v.Name, k)
		}
	}
	require.Equal(t, 1, keyed, "one keyed vertex (count)")
	// Checkpoint counts grow while the job runs: StateLab's reading lies
	// between Flink's before and after it.
	require.GreaterOrEqual(t, job.Checkpoints.Completed, before.Counts.Completed)
	require.LessOrEqual(t, job.Checkpoints.Completed, after.Counts.Completed)
	require.GreaterOrEqual(t, job.Checkpoints.Failed, before.Counts.Failed)
	require.LessOrEqual(t, job.Checkpoints.Failed, after.Counts.Failed)
	require.Equal(t, after.Counts.Restored, job.Checkpoints.Restored)
	t.Logf("statelab attach agrees with Flink's REST API: %d vertices, count's ranges %v, %d checkpoints completed", len(job.Vertices), lf.KeyGroups["count"], job.Checkpoints.Completed)
}
