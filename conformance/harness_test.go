package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// The repository root, from this file's place in it.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// requireTools skips the test (or, with FLINK=1, fails it) when java or mvn
// is missing.
func requireTools(t *testing.T) {
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
	msg := fmt.Sprintf("conformance tests need %s on PATH to run Apache Flink (flinkref/); install a JDK 17 and Maven 3.8+", strings.Join(missing, " and "))
	if os.Getenv("FLINK") == "1" {
		t.Fatal(msg + " (FLINK=1 requires them)")
	}
	t.Skip(msg + "; skipped (set FLINK=1 to require them)")
}

// flinkref is the built harness: the java command line to run it.
type flinkref struct {
	classpath string
}

var (
	buildOnce sync.Once
	built     *flinkref
	buildErr  error
)

// buildFlinkref compiles flinkref with Maven once per test binary.
func buildFlinkref(t *testing.T) *flinkref {
	t.Helper()
	requireTools(t)
	buildOnce.Do(func() {
		dir := filepath.Join(repoRoot(), "flinkref")
		args := []string{"-q", "-B", "-f", filepath.Join(dir, "pom.xml"), "package", "-DskipTests"}
		if p := os.Getenv("FLINKREF_PROFILE"); p != "" {
			args = append(args, "-P"+p)
		}
		start := time.Now()
		target := filepath.Join(dir, "target")
		if p := os.Getenv("FLINKREF_PROFILE"); p != "" {
			target = filepath.Join(target, p) // a profile builds in its own directory (pom.xml)
		}
		// Maven runs only when the build is older than a source: test
		// packages run in parallel, and two Mavens writing one target/
		// could hand a JVM a half-written classpath.
		if !upToDate(dir, filepath.Join(target, "classpath.txt")) {
			out, err := exec.Command("mvn", args...).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("build flinkref (mvn %s): %v\n%s", strings.Join(args, " "), err, out)
				return
			}
			now := time.Now() // Maven may leave an unchanged classpath.txt as it was
			_ = os.Chtimes(filepath.Join(target, "classpath.txt"), now, now)
		}
		cp, err := os.ReadFile(filepath.Join(target, "classpath.txt"))
		if err != nil {
			buildErr = fmt.Errorf("read flinkref's classpath (written by mvn package): %w", err)
			return
		}
		built = &flinkref{classpath: filepath.Join(target, "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp))}
		fmt.Fprintf(os.Stderr, "conformance: flinkref built in %s\n", time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return built
}

// upToDate reports whether built exists and is newer than flinkref's
// pom.xml and every file under src/.
func upToDate(dir, built string) bool {
	st, err := os.Stat(built)
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

// javaArgs are the JVM flags: a small heap and the client compiler, which
// start faster and cost less CPU on a busy machine than the defaults.
func (f *flinkref) javaArgs(main ...string) []string {
	return append([]string{"-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", f.classpath, "org.statelab.flinkref.Main"}, main...)
}

// workDir is where batches, inputs and traces go: FLINKREF_KEEP or a
// temporary directory removed when the tests end.
var (
	workOnce sync.Once
	workPath string
)

func workDir(t *testing.T) string {
	t.Helper()
	workOnce.Do(func() {
		if d := os.Getenv("FLINKREF_KEEP"); d != "" {
			workPath, _ = filepath.Abs(d)
			_ = os.MkdirAll(workPath, 0o755)
			return
		}
		d, err := os.MkdirTemp("", "statelab-conformance-")
		if err != nil {
			panic(err)
		}
		workPath = d
	})
	return workPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if workPath != "" && os.Getenv("FLINKREF_KEEP") == "" {
		_ = os.RemoveAll(workPath)
	}
	os.Exit(code)
}

// flinkScenario is what flinkref reads for one scenario (see flinkref's
// Runner): the job spec as StateLab reads it, the input file, and phases.
type flinkScenario struct {
	Name                string            `json:"name"`
	Job                 map[string]any    `json:"job"`
	Input               string            `json:"input"`
	TaskManagers        int               `json:"taskManagers,omitempty"`
	SlotsPerTaskManager int               `json:"slotsPerTaskManager,omitempty"`
	FlinkConfig         map[string]string `json:"flinkConfig,omitempty"`
	ClusterConfig       map[string]string `json:"clusterConfig,omitempty"`
	// KeysOnly: count and sum report the keys they hold without reading
	// their values (scenario.flinkKeysOnly)
	KeysOnly bool         `json:"keysOnly,omitempty"`
	Phases   []flinkPhase `json:"phases"`
}

type flinkPhase struct {
	Parallelism    map[string]int     `json:"parallelism,omitempty"`
	Limits         map[string][]int64 `json:"limits,omitempty"`
	End            string             `json:"end"` // savepoint | finish
	Faults         []flinkFault       `json:"faults,omitempty"`
	TimeoutSeconds int                `json:"timeoutSeconds,omitempty"`
	AwaitFaults    bool               `json:"awaitFaults,omitempty"`
	// AwaitWatermark: stop with the savepoint only once every alerts
	// subtask's watermark has caught up with the records the limits hold
	// the sources at (so the timers pending in it do not depend on timing)
	AwaitWatermark bool `json:"awaitWatermark,omitempty"`
	// PauseMillis: the runner waits this long before the phase starts
	PauseMillis int64 `json:"pauseMillis,omitempty"`
	// An upgrade: the changed job, submitted with the previous savepoint
	// (and allowNonRestoredState); Refused: the restore is expected to fail,
	// and the next phase restores from the same savepoint.
	Job                   map[string]any `json:"job,omitempty"`
	AllowNonRestoredState bool           `json:"allowNonRestoredState,omitempty"`
	Refused               bool           `json:"refused,omitempty"`
	// Steps run once the phase's input is read (scenario phase.steps); End
	// "cancel" cancels the job after them
	Steps []flinkStep `json:"steps,omitempty"`
	// RestoreCheckpoint: the phase's job is submitted with the previous
	// phase's retained chk-N (flink run -s) instead of its savepoint;
	// RetainOnCancellation: the phase's job keeps its checkpoints when it is
	// cancelled (the next phase restores one)
	RestoreCheckpoint    int64 `json:"restoreCheckpoint,omitempty"`
	RetainOnCancellation bool  `json:"retainOnCancellation,omitempty"`
	// SkipRetained: flinkref does not list the retained checkpoints after
	// the steps (it waits for that set to rest, which periodic checkpoints
	// never let it)
	SkipRetained bool `json:"skipRetained,omitempty"`
}

// flinkStep is one of a phase's steps: checkpoint | savepoint | read (up to Limits).
type flinkStep struct {
	Kind   string             `json:"kind"`
	Limits map[string][]int64 `json:"limits,omitempty"`
}

type flinkFault struct {
	Kind         string `json:"kind"` // throw | stall-checkpoint | tm-lost | break-latest-checkpoint
	Task         string `json:"task"`
	AfterRecords int64  `json:"afterRecords,omitempty"`
	Checkpoint   int64  `json:"checkpoint,omitempty"`
	Millis       int64  `json:"millis,omitempty"`
	TaskManager  int    `json:"taskManager,omitempty"`
	// WhileRestartingMillis (throw, > 0): fire only once the job has been
	// RESTARTING this long (a region waits for its restart delay); a source
	// checks it on every poll, so it fires with nothing left to read too
	WhileRestartingMillis int64 `json:"whileRestartingMillis,omitempty"`
	// AfterChannelState (throw): fire only once a checkpoint completed
	// unaligned with in-flight data persisted (Flink's checkpoint
	// statistics: unaligned, persisted data > 0); kind slow: the task takes
	// Millis per record (backpressure behind it)
	AfterChannelState bool `json:"afterChannelState,omitempty"`
	// AfterCompleted (throw): fire only once this many checkpoints completed
	AfterCompleted int64 `json:"afterCompleted,omitempty"`
	// OnPoll (throw, on a source): fire on a poll, a record or not, once
	// the source's subtasks read AfterRecords together and AfterCompleted
	// checkpoints completed after that
	OnPoll bool `json:"onPoll,omitempty"`
}

// trace is what flinkref wrote for one scenario.
type trace struct {
	Name         string                       `json:"name"`
	Error        string                       `json:"error"`
	FlinkVersion string                       `json:"flinkVersion"`
	Phases       []phaseTrace                 `json:"phases"`
	Committed    map[string][]committedRecord `json:"committed"`
	Millis       int64                        `json:"millis"`
}

type phaseTrace struct {
	Phase     int    `json:"phase"`
	JobID     string `json:"jobId"`
	Savepoint string `json:"savepoint"`
	// RestoredFrom: the savepoint or retained checkpoint the phase's job
	// was submitted with
	RestoredFrom      string             `json:"restoredFrom"`
	TimedOut          bool               `json:"timedOut"`
	FinalStatus       string             `json:"finalStatus"`
	StatusTransitions []statusTransition `json:"statusTransitions"`
	Attempts          map[string]int     `json:"attempts"`
	RestartedSubtasks []string           `json:"restartedSubtasks"`
	// RedeployedAt: when each restarted subtask's last attempt was deployed
	// (wall clock, ms), the order its region restarted in
	RedeployedAt     map[string]int64  `json:"redeployedAt"`
	Exceptions       []exceptionEntry  `json:"exceptions"`
	Checkpoints      checkpointTrace   `json:"checkpoints"`
	Events           []operatorEvent   `json:"events"`
	LostTaskManagers []json.RawMessage `json:"lostTaskManagers"`
	Vertices         []vertexTrace     `json:"vertices"`
	// SavepointWatermarks: each alerts subtask's watermark when the phase
	// stopped with its savepoint (with AwaitWatermark)
	SavepointWatermarks map[string]int64 `json:"savepointWatermarks"`
	// ChannelStateCheckpoint: the first checkpoint an afterChannelState
	// fault saw completed unaligned with persisted in-flight data
	ChannelStateCheckpoint int64 `json:"channelStateCheckpoint"`
	// BrokenCheckpoint: the checkpoint a break-latest-checkpoint fault
	// deleted the state files of
	BrokenCheckpoint int64 `json:"brokenCheckpoint"`
	// OperatorIDs: each vertex's operator ID (hex), by name
	OperatorIDs map[string]string `json:"operatorIds"`
	// LocalStateLookups (local recovery on): each lookup of a subtask's
	// local copy of the checkpoint a restore hands it, in Flink's order
	// (TaskLocalStateStoreImpl's DEBUG log; flinkref's LocalState.java)
	LocalStateLookups []struct {
		Task       string `json:"task"`
		Checkpoint int64  `json:"checkpoint"`
		Found      bool   `json:"found"`
	} `json:"localStateLookups"`
	// KeyedRestores (local recovery on): each keyed state backend a restore
	// created, in Flink's order: the alternative of
	// PrioritizedOperatorSubtaskState it restored from (local or mixed
	// first, the job manager's last) and whether its handles lie under the
	// TaskManagers' local state root (BackendRestorerProcedure's TRACE log;
	// flinkref's LocalState.java)
	KeyedRestores []keyedRestore `json:"keyedRestores"`
	// Steps: what each of the phase's steps did (a triggered checkpoint's
	// id, a savepoint's path, an error); RetainedCheckpoints: the chk-N
	// directories with a _metadata file after the last step
	Steps []struct {
		Kind  string `json:"kind"`
		ID    int64  `json:"id"`
		Path  string `json:"path"`
		Read  bool   `json:"read"`
		Error string `json:"error"`
		// Second and RequestedAt (checkpoint-while-pending): the checkpoint
		// asked for while the step's first was pending, and when (wall
		// clock ms)
		Second      int64 `json:"second"`
		RequestedAt int64 `json:"requestedAt"`
		// LocalCheckpoints (a checkpoint with local recovery on): the
		// checkpoints each subtask held a local copy of once the listing
		// settled (TaskLocalStateStoreImpl's chk_N directories)
		LocalCheckpoints map[string][]int64 `json:"localCheckpoints"`
	} `json:"steps"`
	RetainedCheckpoints []int64 `json:"retainedCheckpoints"`
	// BuildFailure: why Flink refused to build the phase's job (a refused
	// phase whose job graph cannot be built: never submitted, no status)
	BuildFailure string `json:"buildFailure"`
	Failure      *struct {
		Exception string `json:"exception"`
		RootCause string `json:"rootCause"`
	} `json:"failure"`
	Millis int64 `json:"millis"`
}

type statusTransition struct {
	Status   string `json:"status"`
	AtMillis int64  `json:"atMillis"`
}

type exceptionEntry struct {
	Global    bool   `json:"global"`
	Task      string `json:"task"`
	Exception string `json:"exception"`
	RootCause string `json:"rootCause"`
}

type checkpointTrace struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Restored  int `json:"restored"`
	// LatestRestored: the checkpoint the JobManager last assigned to the
	// tasks to restore (also when a task then failed to read it)
	LatestRestored *struct {
		ID int64 `json:"id"`
	} `json:"latestRestored"`
	History []struct {
		ID        int64  `json:"id"`
		Status    string `json:"status"`
		Savepoint bool   `json:"savepoint"`
		Failure   string `json:"failure"`
		Unaligned bool   `json:"unaligned"`
		// PersistedData: in-flight data persisted as channel state
		// (AbstractCheckpointStats.getPersistedData, bytes), and by which
		// subtask ("count#1")
		PersistedData int64            `json:"persistedData"`
		PersistedBy   map[string]int64 `json:"persistedBy"`
		// StateSize and CheckpointedSize: the full state and what this
		// checkpoint wrote (AbstractCheckpointStats.getStateSize /
		// getCheckpointedSize, bytes)
		StateSize        int64 `json:"stateSize"`
		CheckpointedSize int64 `json:"checkpointedSize"`
		// AlignmentBy: each subtask's barrier alignment (ms)
		AlignmentBy map[string]int64 `json:"alignmentBy"`
		// TriggerTimestamp, LatestAckTimestamp (-1 without an ack) and, for
		// a failed checkpoint, FailureTimestamp: wall clock, ms
		TriggerTimestamp   int64 `json:"triggerTimestamp"`
		LatestAckTimestamp int64 `json:"latestAckTimestamp"`
		FailureTimestamp   int64 `json:"failureTimestamp"`
	} `json:"history"`
}

type vertexTrace struct {
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
	// Subtasks: each subtask's attempt at the phase's end and the
	// TaskManager (resource ID) it ran on
	Subtasks []struct {
		Subtask     int    `json:"subtask"`
		Attempt     int    `json:"attempt"`
		TaskManager string `json:"taskManager"`
	} `json:"subtasks"`
}

type operatorEvent struct {
	Event        string                    `json:"event"` // open | close
	Task         string                    `json:"task"`
	Operator     string                    `json:"operator"`
	Subtask      int                       `json:"subtask"`
	Attempt      int                       `json:"attempt"`
	KeyGroups    *struct{ Start, End int } `json:"keyGroups"`
	RestoredKeys map[string]int64          `json:"restoredKeys"`
	StateBackend string                    `json:"stateBackend"`
	Keys         map[string]int64          `json:"keys"`
	// RestoredKeyNames and KeyNames (count, sum): the keys held at open and
	// at close (KeyedStateBackend.getKeys), expired TTL values too, read
	// without reading a value
	RestoredKeyNames []string `json:"restoredKeyNames"`
	KeyNames         []string `json:"keyNames"`
	RestoredSplits   []struct {
		Partition int   `json:"partition"`
		Offset    int64 `json:"offset"`
	} `json:"restoredSplits"`
	OperatorState map[string][]string `json:"operatorState"`
	// an alert (event "alert"): the key, the timer that fired, the session's last event time
	Key   string `json:"key"`
	Timer int64  `json:"timer"`
	Last  int64  `json:"last"`
	// a processing-time alert: when it fired and when its subtask's
	// attempt opened (wall clock, ms)
	FiredAt  int64 `json:"firedAt"`
	OpenedAt int64 `json:"openedAt"`
	// the event-time timers an alerts subtask restored (event "timers"):
	// key, timestamp, and what the function's state needs it for (event,
	// alert, event+alert, or stale: flinkref's Alerts never deletes a timer)
	Timers []struct {
		Key       string `json:"key"`
		Timestamp int64  `json:"timestamp"`
		Role      string `json:"role"`
	} `json:"timers"`
	// an alerts subtask's event time (its timer service's current
	// watermark) as it opened (event "timers") and at a checkpoint it took
	// (event "snapshot", with Checkpoint)
	Watermark *int64 `json:"watermark"`
	// a two-phase sink subtask notified that a checkpoint completed (event
	// "notified"): the checkpoint, and the transactions it committed
	Checkpoint int64       `json:"checkpoint"`
	Committed  []txnCommit `json:"committed"`
	// a two-phase sink subtask notified that a checkpoint was aborted
	// (event "aborted"): the transactions still pending after it
	Pending []txnCommit `json:"pending"`
}

// txnCommit is a transaction a notification committed: the checkpoint it
// was pre-committed in, and how many records it held.
type txnCommit struct {
	Checkpoint int64 `json:"checkpoint"`
	Records    int   `json:"records"`
}

type committedRecord struct {
	Key   string `json:"key"`
	Value int64  `json:"value"`
	Text  string `json:"text"`
}

// events returns the phase's events of kind for op, the last attempt of
// each subtask only, by subtask.
func (p *phaseTrace) lastEvents(kind, op string) map[int]operatorEvent {
	out := map[int]operatorEvent{}
	for _, e := range p.Events {
		if e.Event != kind || e.Operator != op {
			continue
		}
		if prev, ok := out[e.Subtask]; !ok || e.Attempt >= prev.Attempt {
			out[e.Subtask] = e
		}
	}
	return out
}

var (
	batchOnce sync.Once
	traces    map[string]*trace
	batchErr  error
	batchTime time.Duration
)

// flinkTrace runs the whole catalogue on Flink once (one JVM) and returns
// the trace of the named scenario.
func flinkTrace(t *testing.T, name string) *trace {
	t.Helper()
	f := buildFlinkref(t)
	batchOnce.Do(func() {
		dir := workDir(t)
		var scs []flinkScenario
		// FLINKREF_ONLY=REGEXP runs only the scenarios it matches on Flink
		// (with go test -run TestConformance/REGEXP; the others find no trace).
		only := regexp.MustCompile(os.Getenv("FLINKREF_ONLY"))
		for _, sc := range catalogue() {
			if !only.MatchString(sc.name) {
				continue
			}
			if sc.cutAtStateLab {
				// Flink's sources are held where StateLab's savepoint fell:
				// StateLab's Stepper is deterministic, so its run decides it.
				cut, err := statelabCut(t, sc)
				if err != nil {
					batchErr = fmt.Errorf("%s: where StateLab's savepoint falls: %w", sc.name, err)
					return
				}
				sc.flinkCut = cut
			}
			scs = append(scs, sc.flink(dir))
		}
		b, _ := json.MarshalIndent(map[string]any{"scenarios": scs}, "", "  ")
		batch := filepath.Join(dir, "batch.json")
		if err := os.WriteFile(batch, b, 0o644); err != nil {
			batchErr = err
			return
		}
		out := filepath.Join(dir, "traces")
		start := time.Now()
		// Bounded, so a hung Flink never outlives the test binary.
		ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "java", f.javaArgs("run", batch, out)...)
		logf, _ := os.Create(filepath.Join(dir, "flinkref.log"))
		cmd.Stdout, cmd.Stderr = logf, logf
		err := cmd.Run()
		logf.Close()
		batchTime = time.Since(start)
		fmt.Fprintf(os.Stderr, "conformance: %d scenarios ran on Flink in %s (one JVM)\n", len(scs), batchTime.Round(time.Millisecond))
		traces = map[string]*trace{}
		for _, sc := range scs {
			b, rerr := os.ReadFile(filepath.Join(out, sc.Name+".json"))
			if rerr != nil {
				continue
			}
			var tr trace
			if jerr := json.Unmarshal(b, &tr); jerr == nil {
				traces[sc.Name] = &tr
			}
		}
		if err != nil && len(traces) == 0 {
			log, _ := os.ReadFile(filepath.Join(dir, "flinkref.log"))
			batchErr = fmt.Errorf("flinkref run: %v\n%s", err, tail(string(log), 4000))
		}
	})
	if batchErr != nil {
		t.Fatal(batchErr)
	}
	tr := traces[name]
	if tr == nil {
		t.Fatalf("flinkref wrote no trace for %s (see flinkref.log; FLINKREF_KEEP=DIR keeps it)", name)
	}
	if tr.Error != "" {
		t.Fatalf("flinkref failed on %s: %s", name, tr.Error)
	}
	return tr
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
