package conformance

import (
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

	"github.com/statelab/statelab/engine"
	"github.com/stretchr/testify/require"
)

// taskmanager-killed-heartbeat: a TaskManager killed with SIGKILL is noticed
// by the JobManager's heartbeat (HeartbeatManagerImpl): after
// heartbeat.rpc-failure-threshold failed heartbeat requests in a row
// (DefaultHeartbeatMonitor.reportHeartbeatRpcFailure: "TaskManager with id …
// is no longer reachable."), or, with that off, after heartbeat.timeout from
// the last heartbeat answered ("The heartbeat of TaskManager with id … timed
// out."). MiniCluster.terminateTaskManager (taskmanager-lost) tells the
// JobManager at once, so flinkref's KilledTaskManager runs a standalone
// session cluster and a TaskManager in a JVM of its own that it kills
// (one extra JVM, about 10 s a variant). The job is the etl template (forward
// edges only), so no task reads from the killed TaskManager over the network
// and only the heartbeat can tell. StateLab follows with cluster.heartbeatInterval
// and cluster.heartbeatRpcFailureThreshold set (engine/heartbeat.go).

const killedTMName = "taskmanager-killed-heartbeat"

var killedTMHeartbeat = struct {
	timeout, interval time.Duration
}{2 * time.Second, 200 * time.Millisecond}

// killedTMVariant is one run: the threshold (0: Flink's default, 2; -1: off)
// and the window after the kill in which the rule has the JobManager fail
// the lost tasks.
type killedTMVariant struct {
	name      string
	threshold int
	min, max  time.Duration
	flinkMsg  string // Flink's failure message (the JobMaster's or the resource manager's, whichever noticed first)
	slMsg     string // StateLab's
}

func killedTMVariants() []killedTMVariant {
	hb := killedTMHeartbeat
	return []killedTMVariant{
		{name: killedTMName, threshold: 0, min: hb.interval, max: 2 * hb.interval,
			flinkMsg: "TaskManager with id tm-killed is no longer reachable", slMsg: "is no longer reachable: 2 heartbeat requests in a row failed"},
		{name: killedTMName + "-timeout", threshold: -1, min: hb.timeout - hb.interval, max: hb.timeout,
			flinkMsg: "eartbeat of TaskManager with id tm-killed timed out", slMsg: "heartbeat of TaskManager"},
	}
}

func killedTMScenario() *scenario {
	return &scenario{
		name:         killedTMName,
		spec:         etlJob(),
		partitions:   map[string]int{"source": 2},
		lines:        map[string][][]string{"source": {genLines(57, 120, 3)}},
		phases:       []phase{{}},
		taskManagers: 2,
		slots:        1,
	}
}

// killedTMTrace is what KilledTaskManager writes.
type killedTMTrace struct {
	Name                string                       `json:"name"`
	Error               string                       `json:"error"`
	FlinkVersion        string                       `json:"flinkVersion"`
	LostSubtasks        []string                     `json:"lostSubtasks"`
	CompletedBeforeKill int64                        `json:"completedBeforeKill"`
	RestartedSubtasks   []string                     `json:"restartedSubtasks"`
	FinalStatus         string                       `json:"finalStatus"`
	Failures            []killedTMFailure            `json:"failures"`
	Timeline            []map[string]any             `json:"timeline"`
	Committed           map[string][]committedRecord `json:"committed"`
	Millis              int64                        `json:"millis"`
}

type killedTMFailure struct {
	AfterKillMillis int64  `json:"afterKillMillis"`
	Exception       string `json:"exception"`
	Message         string `json:"message"`
	Task            string `json:"task"`
	TaskManager     string `json:"taskManager"`
}

// runKilledTM runs every variant on Flink in one flinkref JVM (each with its
// own cluster and killed TaskManager JVM, one at a time).
func runKilledTM(t *testing.T, sc *scenario) map[string]*killedTMTrace {
	t.Helper()
	f := buildFlinkref(t)
	dir := filepath.Join(workDir(t), "killed-taskmanager")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	fs := sc.flink(dir)
	parts, _ := sc.layout("source")
	limits := make([]int64, len(parts))
	for i, p := range parts {
		limits[i] = int64(len(p) / 2) // held there: the job still runs when the TaskManager dies
	}
	var files []string
	for _, v := range killedTMVariants() {
		hb := map[string]any{"timeout": killedTMHeartbeat.timeout.Milliseconds(), "interval": killedTMHeartbeat.interval.Milliseconds()}
		if v.threshold != 0 {
			hb["rpcFailureThreshold"] = v.threshold
		}
		b, _ := json.MarshalIndent(map[string]any{"name": v.name, "job": fs.Job, "input": fs.Input,
			"limits": map[string][]int64{"source": limits}, "heartbeat": hb, "checkpointsBeforeKill": 2, "waitMillis": 30000}, "", "  ")
		p := filepath.Join(dir, v.name+".json")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		files = append(files, p)
	}
	traces := map[string]*killedTMTrace{}
	for i, v := range killedTMVariants() {
		// One JVM per variant: a cluster's RPC system may stop its JVM as it
		// shuts down (flinkref's KilledTaskManager says why).
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		start := time.Now()
		out, err := exec.CommandContext(ctx, "java", "-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f.classpath,
			"org.statelab.flinkref.KilledTaskManager", filepath.Join(dir, "traces"), files[i]).CombinedOutput()
		cancel()
		fmt.Fprintf(os.Stderr, "conformance: %s ran on Flink in %s (with a TaskManager JVM it killed)\n", v.name, time.Since(start).Round(time.Millisecond))
		b, rerr := os.ReadFile(filepath.Join(dir, "traces", v.name+".json"))
		if rerr != nil {
			t.Fatalf("KilledTaskManager wrote no trace for %s: %v (%v)\n%s", v.name, rerr, err, tail(string(out), 4000))
		}
		var tr killedTMTrace
		require.NoError(t, json.Unmarshal(b, &tr))
		if tr.Error != "" {
			t.Fatalf("KilledTaskManager failed on %s: %s\n%s", v.name, tr.Error, tail(string(out), 4000))
		}
		traces[v.name] = &tr
	}
	return traces
}

// killedTMStateLab runs the etl job on StateLab with Flink's heartbeat
// settings: a spare TaskManager joins, then the TaskManager of lostTask
// crashes. It returns how long after the crash the job failed over (job
// time), the message, the subtasks deployed again and the sink's
// comparison with the ground truth.
func killedTMStateLab(t *testing.T, sc *scenario, v killedTMVariant, lostTask string) (time.Duration, string, []string, engine.Comparison) {
	t.Helper()
	b, _ := json.Marshal(sc.specWithSources(true))
	js, err := engine.LoadSpec(b)
	require.NoError(t, err)
	js.Cluster.HeartbeatTimeout = engine.Duration(killedTMHeartbeat.timeout)
	js.Cluster.HeartbeatInterval = engine.Duration(killedTMHeartbeat.interval)
	js.Cluster.HeartbeatRPCFailureThreshold = v.threshold
	require.NoError(t, js.Validate())
	var events []engine.Event
	s, err := engine.NewStepper(js, engine.Options{RecordEvents: func(e engine.Event) { events = append(events, e) }})
	require.NoError(t, err)
	defer s.Close()
	given := map[string]int{"source": len(sc.lines["source"][0])}
	_, err = s.RunUntil(func(sn *engine.Snapshot) bool {
		return sn.Checkpoints.Counts.Completed >= 2 && caughtUp(sn, sc, given)
	}, stepsPerPhase)
	require.NoError(t, err)
	require.NoError(t, s.Do(engine.Command{Name: engine.CmdAddTaskManager}))
	snap := s.Snapshot()
	tm := taskManagerOf(&snap, lostTask)
	mark := len(events)
	crashAt := s.Snapshot().At
	require.NoError(t, s.Do(engine.Command{Name: engine.CmdCrashTaskManager, TaskManager: tm}))
	_, err = s.RunUntil(func(sn *engine.Snapshot) bool {
		return sn.Job.Attempt > 0 && sn.Checkpoints.Counts.Completed >= 4 && caughtUp(sn, sc, given)
	}, stepsPerPhase)
	require.NoError(t, err)
	var noticed time.Duration
	var msg string
	deployed := map[string]bool{}
	for _, e := range events[mark:] {
		switch {
		case e.Kind == engine.EvJobStatus && e.Status == string(engine.JobRestarting) && msg == "":
			noticed, msg = e.At-crashAt, e.Message
		case e.Kind == engine.EvTaskStatus && e.Status == string(engine.TaskDeploying):
			deployed[e.Task] = true
		}
	}
	var restarted []string
	for k := range deployed {
		restarted = append(restarted, k)
	}
	sort.Strings(restarted)
	cmp, err := s.Compare()
	require.NoError(t, err)
	var sink engine.Comparison
	for _, c := range cmp {
		if c.Sink == "sink" {
			sink = c
		}
	}
	return noticed, msg, restarted, sink
}

func TestTaskManagerKilledHeartbeat(t *testing.T) {
	sc := killedTMScenario()
	traces := runKilledTM(t, sc)
	want := etlOutput(sc.lines["source"][0])
	for _, v := range killedTMVariants() {
		t.Run(v.name, func(t *testing.T) {
			j := &judge{t: t}
			fl := traces[v.name]
			require.NotEmpty(t, fl.LostSubtasks, "the killed TaskManager ran subtasks")
			require.NotEmpty(t, fl.Failures, "the JobManager failed the lost tasks")
			first := fl.Failures[0]
			for _, f := range fl.Failures {
				if f.AfterKillMillis < first.AfterKillMillis {
					first = f
				}
			}
			after := time.Duration(first.AfterKillMillis) * time.Millisecond
			t.Logf("Flink %s: TaskManager killed running %v (%d checkpoints completed); %s %s %v after the kill; restarted %v; %s in %d ms",
				fl.FlinkVersion, fl.LostSubtasks, fl.CompletedBeforeKill, first.Task, first.Message, after, fl.RestartedSubtasks, fl.FinalStatus, fl.Millis)
			// Wall clock: the rule's window, with slack for a busy machine
			// (a heartbeat request may leave late, the kill takes a few ms).
			j.true(fmt.Sprintf("Flink failed the lost tasks within the rule's window (%v, %v] after the kill (+150 ms slack)", v.min, v.max),
				after > v.min-50*time.Millisecond && after <= v.max+150*time.Millisecond, after)
			j.true("Flink's failure: "+v.flinkMsg, strings.Contains(first.Message, v.flinkMsg), first.Message)
			j.true("Flink's job FINISHED", fl.FinalStatus == "FINISHED", fl.FinalStatus)
			got := committedMultiset(&trace{Committed: fl.Committed}, "sink")
			d, l, u := multisetDiff(got, want)
			j.true("Flink's output is exactly once after the loss", d == 0 && l == 0 && u == 0, []int{d, l, u})

			lostMap := ""
			for _, s := range fl.LostSubtasks {
				if strings.HasPrefix(s, "map#") {
					lostMap = s
				}
			}
			require.NotEmpty(t, lostMap, "the killed TaskManager ran a map subtask")
			noticed, msg, restarted, sink := killedTMStateLab(t, sc, v, lostMap)
			t.Logf("StateLab: noticed %v (job time) after the crash: %s; restarted %v", noticed, msg, restarted)
			j.true(fmt.Sprintf("StateLab failed the lost tasks within the rule's window (%v, %v] of job time", v.min, v.max),
				noticed > v.min && noticed <= v.max, noticed)
			j.true("StateLab's failure: "+v.slMsg, strings.Contains(msg, v.slMsg), msg)
			j.equal("subtasks restarted (the lost TaskManager's pipelined region)", restarted, fl.RestartedSubtasks)
			j.equal("restarted = lost", restarted, fl.LostSubtasks)
			j.equal("sink output exactly once (duplicates, losses, unexpected)", []int{sink.DuplicateRecords, sink.LostRecords, len(sink.Unexpected)}, []int{d, l, u})
		})
	}
}
