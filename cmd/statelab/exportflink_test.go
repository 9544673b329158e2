package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/lessons"
)

func TestExportFlinkRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--out", t.TempDir()},
		{"--lesson", "05-failure-and-recovery", "--spec", "x.yaml", "--out", t.TempDir()},
		{"--lesson", "05-failure-and-recovery"},
		{"--lesson", "no-such-lesson", "--out", t.TempDir()},
		{"--spec", "job.yaml", "--variant", "x", "--out", t.TempDir()},
	} {
		var out, errb bytes.Buffer
		code := runExportFlink(context.Background(), args, IO{Out: &out, Err: &errb})
		require.Equal(t, exitUsage, code, "%v: %s", args, errb.String())
		require.NotEmpty(t, errb.String())
	}
}

// TestExportFlinkProcessingTimeAlerts exports an alerts job that times out
// on processing time (timeDomain: processing), runs it on Flink and checks
// that it ran on processing time: every input event ends in exactly one
// committed alert of its key (the reference StateLab's engine tests use for
// processing-time alerts, whose grouping depends on arrival), and every
// alert's last event is at a processing time (the wall clock), later than
// any event time (an event-time job's alerts name an event time). The export itself
// is checked without Flink; the run is skipped without java and mvn unless
// FLINK=1.
func TestExportFlinkProcessingTimeAlerts(t *testing.T) {
	const spec = `{"name": "silence-alerts", "seed": 1, "checkpointing": {"interval": "200ms"},
  "operators": [
    {"id": "source", "kind": "source", "parallelism": 2, "options": {"partitions": 2, "generator": "words", "records": 2000, "keys": 20, "wordsPerLine": 1}},
    {"id": "alerts", "kind": "alerts", "parallelism": 2, "options": {"timeout": "200ms", "timeDomain": "processing"}},
    {"id": "sink", "kind": "sink", "parallelism": 1}],
  "edges": [
    {"from": "source", "to": "alerts", "partitioner": "hash"},
    {"from": "alerts", "to": "sink", "partitioner": "rebalance"}]}`
	file := filepath.Join(t.TempDir(), "job.json")
	require.NoError(t, os.WriteFile(file, []byte(spec), 0o644))
	dir := filepath.Join(t.TempDir(), "job")
	var out, errb bytes.Buffer
	require.Equal(t, exitOK, runExportFlink(context.Background(), []string{"--spec", file, "--out", dir}, IO{Out: &out, Err: &errb}), errb.String())
	b, err := os.ReadFile(filepath.Join(dir, "job.json"))
	require.NoError(t, err)
	require.Contains(t, string(b), `"timeDomain": "processing"`)
	b, err = os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(b), "times out on processing time")

	// The input, per key, and its latest event time.
	var input struct {
		Sources map[string][][]struct {
			Key string `json:"key"`
			TS  int64  `json:"ts"`
		} `json:"sources"`
	}
	b, err = os.ReadFile(filepath.Join(dir, "input.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &input))
	events := map[string]int64{}
	var maxTS int64
	for _, part := range input.Sources["source"] {
		for _, r := range part {
			events[r.Key]++
			maxTS = max(maxTS, r.TS)
		}
	}
	require.Len(t, events, 20)

	requireFlinkTools(t)
	alerts := runExportedJob(t, dir)
	got := map[string]int64{}
	for _, a := range alerts {
		got[a.Key] += a.Value
		last, ok := strings.CutPrefix(a.Text, "no event for 200ms after ")
		require.True(t, ok, "alert %+v", a)
		d, err := time.ParseDuration(last)
		require.NoError(t, err, "alert %+v", a)
		require.Greater(t, d.Milliseconds(), maxTS, "alert %+v: its key's last event is at no processing time (the job ran on event time?)", a)
	}
	require.Equal(t, events, got, "events per key: input vs the counts Flink's alerts committed")
}

// requireFlinkTools skips the test without java and mvn, unless FLINK=1.
func requireFlinkTools(t *testing.T) {
	var missing []string
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := "export-flink's run on Flink needs " + strings.Join(missing, " and ") + " (a JDK 17 and Maven 3.8+)"
		if os.Getenv("FLINK") == "1" {
			t.Fatal(msg + "; FLINK=1 requires them")
		}
		t.Skip(msg + "; skipped (set FLINK=1 to require them)")
	}
}

type exportedRecord struct {
	Key   string `json:"key"`
	Value int64  `json:"value"`
	Text  string `json:"text"`
}

// runExportedJob builds the exported project in dir, runs it on a local
// MiniCluster and returns what its sink committed.
func runExportedJob(t *testing.T, dir string) []exportedRecord {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "mvn", "-q", "-B", "package", "-DskipTests")
	build.Dir = dir
	b, err := build.CombinedOutput()
	require.NoError(t, err, "mvn package in the exported project:\n%s", b)
	cp, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
	require.NoError(t, err)
	run := exec.CommandContext(ctx, "java", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", "target/classes"+string(os.PathListSeparator)+strings.TrimSpace(string(cp)),
		"org.statelab.flinkref.ExportedJob", "--job", "job.json", "--input", "input.json", "--output", "output")
	run.Dir = dir
	b, err = run.CombinedOutput()
	require.NoError(t, err, "the exported job on Flink:\n%s", exportTail(string(b), 3000))
	f, err := os.Open(filepath.Join(dir, "output", "sink.jsonl"))
	require.NoError(t, err, "Flink committed nothing to output/sink.jsonl")
	defer f.Close()
	var recs []exportedRecord
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r exportedRecord
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		recs = append(recs, r)
	}
	require.NoError(t, sc.Err())
	return recs
}

// TestExportFlinkRunsOnFlink exports lesson 05's job (click counts in
// 15-second event-time windows, an exactly-once sink), builds the project
// with Maven, runs it on a local Flink MiniCluster and checks that Flink
// commits the same window results StateLab's engine fires for the same job.
// Skipped without java and mvn unless FLINK=1.
func TestExportFlinkRunsOnFlink(t *testing.T) {
	var missing []string
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := "export-flink's run on Flink needs " + strings.Join(missing, " and ") + " (a JDK 17 and Maven 3.8+)"
		if os.Getenv("FLINK") == "1" {
			t.Fatal(msg + "; FLINK=1 requires them")
		}
		t.Skip(msg + "; skipped (set FLINK=1 to require them)")
	}
	const slug = "05-failure-and-recovery"
	dir := filepath.Join(t.TempDir(), "job")
	var out, errb bytes.Buffer
	require.Equal(t, exitOK, runExportFlink(context.Background(), []string{"--lesson", slug, "--out", dir}, IO{Out: &out, Err: &errb}), errb.String())
	for _, f := range []string{"pom.xml", "job.json", "input.json", "README.md", "src/main/java/org/statelab/flinkref/ExportedJob.java"} {
		require.FileExists(t, filepath.Join(dir, f))
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "mvn", "-q", "-B", "package", "-DskipTests")
	build.Dir = dir
	b, err := build.CombinedOutput()
	require.NoError(t, err, "mvn package in the exported project:\n%s", b)
	cp, err := os.ReadFile(filepath.Join(dir, "target", "classpath.txt"))
	require.NoError(t, err)
	run := exec.CommandContext(ctx, "java", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-cp", "target/classes"+string(os.PathListSeparator)+strings.TrimSpace(string(cp)),
		"org.statelab.flinkref.ExportedJob", "--job", "job.json", "--input", "input.json", "--output", "output")
	run.Dir = dir
	b, err = run.CombinedOutput()
	require.NoError(t, err, "the exported job on Flink:\n%s", exportTail(string(b), 3000))

	flink := map[string]int{}
	f, err := os.Open(filepath.Join(dir, "output", "sink.jsonl"))
	require.NoError(t, err, "Flink committed nothing to output/sink.jsonl")
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			Key   string `json:"key"`
			Value int64  `json:"value"`
			Text  string `json:"text"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		flink[fmt.Sprintf("%s %s %d", r.Key, r.Text, r.Value)]++
	}

	// The same job on StateLab's engine: every window it fires.
	cat, err := lessons.Default()
	require.NoError(t, err)
	l, ok := cat.Lesson(slug)
	require.True(t, ok)
	spec, err := l.Job("")
	require.NoError(t, err)
	require.NoError(t, spec.Validate())
	statelab := map[string]int{}
	s, err := engine.NewStepper(spec, engine.Options{RecordEvents: func(e engine.Event) {
		if e.Kind == engine.EvWindowFired {
			statelab[fmt.Sprintf("%s %s %d", e.Key, e.Window, e.Value)]++
		}
	}})
	require.NoError(t, err)
	defer s.Close()
	_, err = s.RunUntilDrained(5_000_000)
	require.NoError(t, err)
	cmp, err := s.Compare()
	require.NoError(t, err)
	for _, c := range cmp {
		require.True(t, c.ExactlyOnce, "StateLab's sink %s is not exactly once", c.Sink)
		require.Equal(t, exportTotal(flink), c.Committed, "records committed by Flink and by StateLab's sink %s", c.Sink)
	}
	require.NotEmpty(t, flink)
	require.Equal(t, exportKeys(statelab), exportKeys(flink), "window results: StateLab fired vs Flink committed")
	require.Equal(t, statelab, flink)
}

func exportTotal(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func exportKeys(m map[string]int) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	sort.Strings(k)
	return k
}

func exportTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
