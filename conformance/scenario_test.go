package conformance

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/statelab/statelab/engine"
)

// scenario is one row of the catalogue: a job, its input, and what happens
// to it, phase by phase, on both StateLab and Flink.
type scenario struct {
	name  string
	claim string // what StateLab claims (and docs/flink-fidelity.md says)
	// pending, when set, says why StateLab does not follow Flink here yet
	// and which issue will make it: the test records Flink's side and
	// reports differences without failing.
	pending string
	spec    map[string]any
	// partitions per source id; lines per source id per phase
	partitions map[string]int
	lines      map[string][][]string
	phases     []phase
	// cluster shape on Flink (0: one TaskManager with enough slots)
	taskManagers, slots int
	// flinkCluster: options of Flink's MiniCluster (its JobManager and
	// resource manager) the scenario needs, said why where it is set
	flinkCluster map[string]string
	// statelabOnlyFlink: StateLab cannot run this scenario yet (why)
	flinkOnly string
	// flinkKeysOnly: flinkref's count and sum name the keys they hold when
	// they open and close without reading their values (a read of an
	// expired TTL value clears it, Flink's AbstractTtlDecorator, and would
	// change what the next savepoint holds); StateLab's inspector reads
	// without clearing (slPhase.restoredHeld)
	flinkKeysOnly bool
	// continuous: the input goes on across the phases with timestamps that
	// go on (line i has timestamp i, whatever its phase). Flink holds its
	// sources at each phase's end (limits) and stops with a savepoint there;
	// StateLab's topics hold every line from the start, and a phase's
	// rescale is applied once its sources have read the earlier phases'
	// lines (StateLab's sources cannot be held, and a typed-in record has
	// timestamp 0), so where StateLab's savepoint falls may differ by the
	// records in flight — unless cutAtStateLab holds Flink's sources there.
	continuous bool
	// cutAtStateLab (with continuous): Flink's first phase holds its
	// sources at the offsets StateLab's rescale savepoint holds (StateLab
	// runs first: its Stepper is deterministic) and stops with the
	// savepoint only once the watermarks caught up with them, so that both
	// savepoints hold the same records and the timers pending in them can
	// be compared one by one. flinkCut is that cut, per source and partition.
	cutAtStateLab bool
	flinkCut      map[string][]int64
	// differs: where StateLab simplifies on purpose around this scenario
	// (docs/flink-fidelity.md), why, and the static/i18n sentence the live
	// view's story shows when it happens (TestCatalogueDifferencesInTheUI).
	differs []difference
	check   func(j *judge, sl *slResult, fl *trace)
}

// difference is one way StateLab differs from Flink on purpose: why, and
// the key of the sentence the UI says it with.
type difference struct {
	why string
	ui  string
}

type phase struct {
	rescale map[string]int // applied before the phase: operator -> new parallelism
	// pause: before the phase starts, time passes with no input: Flink
	// waits this long (wall clock) between the previous phase's savepoint
	// and this phase's start; StateLab runs its (virtual) clock on by it
	pause time.Duration
	// flinkFaults and statelabFaults are the same fault, in each system's terms
	flinkFaults    []flinkFault
	statelabFaults []slFault
	// awaitFaults: end the phase (stop with savepoint) only after its faults fired and the job recovered
	awaitFaults bool
	// statusesFromStart: StateLab records job statuses and deployments from
	// the phase's start, for a phase whose failures come from the job itself
	// (no fault injected), as Flink's trace does
	statusesFromStart bool
	// holdInput (last phase): the sources never end their input, so the job
	// runs until it fails for good: Flink's sources wait at the input's end
	// (limits) and the phase ends with the job; StateLab runs until its job
	// is FAILED. For a failure that needs time to pass (checkpoints), which
	// a finite input could outrun.
	holdInput bool
	// refused: the phase's rescale or upgrade is one both must refuse (StateLab's command fails; Flink's
	// restore fails). After a refused upgrade the next phase tries the same savepoint again.
	refused bool
	// upgrade, when set, starts the phase from a savepoint of the job as it ran (taken once, after the
	// previous phase) with a changed job: StateLab's upgrade command (Change, Operator, UID,
	// AllowNonRestoredState; Name and Checkpoint are filled in) and, for Flink, job — the changed job spec
	// written out by hand — submitted with the savepoint and allowNonRestoredState.
	upgrade *engine.Command
	job     map[string]any
	// steps run in order once the phase's input is read (after its faults):
	// stepCheckpoint and stepSavepoint trigger a checkpoint or an
	// intermediate savepoint by hand and wait for it (StateLab's commands;
	// Flink's MiniCluster.triggerCheckpoint / triggerSavepoint, as the REST
	// API's POST /jobs/:jobid/checkpoints and /savepoints do); stepRead reads
	// the scenario's next chunk of lines (a chunk after the phases' own:
	// read steps count their chunks on over all phases). The sources are held at the
	// end of what the steps read, so the job keeps running: Flink's input
	// file holds one chunk more than the steps read.
	steps []string
	// cancel (last phase, with steps): the phase ends by cancelling the job
	// after its steps (Flink: MiniCluster.cancelJob; StateLab simply stops)
	cancel bool
	// restoreCheckpoint (> 0, a later phase): the phase starts from the
	// previous phase's retained checkpoint N instead of a savepoint, the
	// user's act: StateLab's restore command on the running job; on Flink
	// the previous phase's job is cancelled after its steps with its
	// checkpoints retained (RETAIN_ON_CANCELLATION) and this phase's job is
	// submitted with <its checkpoint directory>/chk-N, as `flink run -s`
	// does. The phase before it keeps its steps' limits (its sources held)
	// and this phase's own input, and the steps it reads, go on from there.
	restoreCheckpoint int64
	// periodicSteps: periodic checkpoints go on while the steps run, so
	// the retained checkpoints are not listed after them (flinkref waits
	// for that set to rest)
	periodicSteps bool
}

// The steps a phase runs by hand (phase.steps).
const (
	stepCheckpoint = "checkpoint"
	stepSavepoint  = "savepoint"
	stepRead       = "read"
	// stepReadInFlight reads the next chunk as stepRead does but waits
	// only until the sources have read it, not until it reached the sinks,
	// so that records are in flight at the next step (flinkref's read step
	// waits only for its sources anyway: it is a read there)
	stepReadInFlight = "read-in-flight"
	// stepAddTaskManager: a TaskManager joins the cluster (StateLab's
	// add-taskmanager; Flink's MiniCluster.startTaskManager) and the step
	// waits until the job runs at a higher parallelism (reactive mode)
	stepAddTaskManager = "add-taskmanager"
	// stepCheckpointFails: a checkpoint by hand that the scenario's fault
	// makes fail (a stalled snapshot: it expires); awaited until it failed
	stepCheckpointFails = "checkpoint-expires"
	// stepCheckpointWhilePending: a checkpoint by hand whose snapshot the
	// scenario stalls, and a second asked for while the first is pending
	// (Flink: once the stall began); waits for both. The step's id is the
	// first's; the second is the next id
	stepCheckpointWhilePending = "checkpoint-while-pending"
)

// slFault is a StateLab command applied once the task has taken in at least
// afterRecords records, or (cmd stallSnapshot) task's snapshot of
// checkpoint stalled for stall (engine.Options.SnapshotStall, once).
type slFault struct {
	cmd          string // crash-subtask | crash-taskmanager | stallSnapshot
	task         string // task watched (and crashed, for crash-subtask)
	taskManager  string
	afterRecords int64
	then         []string // commands after it (e.g. restart-taskmanager)
	checkpoint   int64
	stall        time.Duration
	// whileRestarting (> 0): crash only once the job has been RESTARTING
	// this long after the previous fault (job time), as flinkref's
	// whileRestartingMillis: a second failure while a region waits
	whileRestarting time.Duration
	// afterChannelState (crash-subtask): crash only once a checkpoint
	// completed unaligned with channel state (in-flight records), as
	// flinkref's afterChannelState
	afterChannelState bool
	// afterCompleted (crash-subtask): crash only once this many checkpoints
	// completed, as flinkref's afterCompleted
	afterCompleted int
	// captureRestored: after the crash, run until every count subtask
	// restored and read its keyed state then (slPhase.afterFault*)
	captureRestored bool
}

// breakLatest is the slFault that deletes the state files of the latest
// completed checkpoint (once two completed and none is in progress) and
// then crashes task, as flinkref's break-latest-checkpoint does.
const breakLatest = "break-latest-checkpoint"

// corruptPending is the slFault that, once a checkpoint completed and none
// is in progress, cuts off the first "pending-transactions" element of every
// subtask in the latest checkpoint's metadata (the metadata's CRC32C made
// to match: a writer that wrote it short) and then crashes task, as
// flinkref's corrupt-pending-transactions cuts the sink's state files off at
// that element.
const corruptPending = "corrupt-pending-transactions"

// stallSnapshot is the slFault that stalls one snapshot: not a command, an
// engine option the harness sets when it starts the Stepper.
const stallSnapshot = "stall-snapshot"

// genLines makes n lines of words from a small vocabulary, from a fixed seed.
func genLines(seed uint64, n, words int) []string {
	vocab := strings.Fields("flink state stream key group barrier checkpoint savepoint window event time watermark task slot operator source sink record offset partition")
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]string, n)
	for i := range out {
		w := make([]string, 1+r.IntN(words))
		for k := range w {
			w[k] = vocab[r.IntN(len(vocab))]
		}
		out[i] = strings.Join(w, " ")
	}
	return out
}

// record is one source record as both systems see it.
type inputRecord struct {
	Text string `json:"text"`
	TS   int64  `json:"ts"`
}

// layout deals a source's lines, phase after phase, over its partitions:
// line i (counted over all phases) goes to partition i mod partitions, as
// StateLab deals options.lines; lines of phase 0 carry timestamp i (as
// options.lines does), later ones 0 (as injected records do). It returns the
// records per partition and how many each partition holds after each phase.
func (sc *scenario) layout(src string) (parts [][]inputRecord, ends [][]int64) {
	p := sc.partitions[src]
	parts = make([][]inputRecord, p)
	i := 0
	for ph, lines := range sc.lines[src] {
		for _, l := range lines {
			ts := int64(0)
			if ph == 0 || sc.continuous {
				ts = int64(i)
			}
			parts[i%p] = append(parts[i%p], inputRecord{Text: l, TS: ts})
			i++
		}
		end := make([]int64, p)
		for k := range parts {
			end[k] = int64(len(parts[k]))
		}
		ends = append(ends, end)
	}
	return parts, ends
}

func (sc *scenario) sources() []string {
	var s []string
	for k := range sc.partitions {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

// flink writes the scenario's input file into dir and returns what flinkref reads.
func (sc *scenario) flink(dir string) flinkScenario {
	in := map[string][][]inputRecord{}
	ends := map[string][][]int64{}
	for _, src := range sc.sources() {
		in[src], ends[src] = sc.layout(src)
	}
	b, _ := json.Marshal(map[string]any{"sources": in})
	input := filepath.Join(dir, sc.name+".input.json")
	if err := os.WriteFile(input, b, 0o644); err != nil {
		panic(err)
	}
	fs := flinkScenario{Name: sc.name, Job: sc.specWithSources(false), Input: input, TaskManagers: sc.taskManagers, SlotsPerTaskManager: sc.slots, ClusterConfig: sc.flinkCluster, KeysOnly: sc.flinkKeysOnly}
	par := map[string]int{}
	chunk := len(sc.phases) // the next chunk a read step reads, over all phases
	for i, ph := range sc.phases {
		for op, p := range ph.rescale {
			par[op] = p
		}
		fp := flinkPhase{Parallelism: copyMap(par), Faults: ph.flinkFaults, End: "finish", AwaitFaults: ph.awaitFaults, PauseMillis: ph.pause.Milliseconds(), Refused: ph.refused, RestoreCheckpoint: ph.restoreCheckpoint, SkipRetained: ph.periodicSteps}
		if ph.upgrade != nil {
			fp.Job = sc.withSources(ph.job, false)
			fp.AllowNonRestoredState = ph.upgrade.AllowNonRestoredState
		}
		if ph.holdInput {
			fp.TimeoutSeconds = 60
			fp.Limits = map[string][]int64{}
			for _, src := range sc.sources() {
				e := ends[src]
				fp.Limits[src] = e[min(i, len(e)-1)]
			}
		}
		if len(ph.steps) > 0 {
			// Held at the phase's input (and, for each read, at the next chunk's end).
			fp.Limits = map[string][]int64{}
			for _, src := range sc.sources() {
				fp.Limits[src] = ends[src][i]
			}
			for _, st := range ph.steps {
				step := flinkStep{Kind: st}
				if st == stepReadInFlight {
					step.Kind = stepRead
				}
				if st == stepNewerWhilePending {
					// flinkref asks for the second once the stall faults fired
					step.Kind = stepCheckpointWhilePending
				}
				if st == stepRead || st == stepReadInFlight || st == stepCheckpointDuringRead {
					step.Limits = map[string][]int64{}
					for _, src := range sc.sources() {
						step.Limits[src] = ends[src][chunk]
					}
					chunk++
				}
				fp.Steps = append(fp.Steps, step)
			}
			if ph.cancel {
				fp.End = "cancel"
			}
		}
		if i < len(sc.phases)-1 && sc.phases[i+1].restoreCheckpoint > 0 {
			// The next phase restores one of this job's checkpoints: cancelled
			// after its steps, its checkpoints retained.
			fp.End, fp.RetainOnCancellation = "cancel", true
		} else if i < len(sc.phases)-1 {
			fp.End = "savepoint"
			fp.Limits = map[string][]int64{}
			for _, src := range sc.sources() {
				e := ends[src]
				fp.Limits[src] = e[min(i, len(e)-1)]
				if c := sc.flinkCut[src]; i == 0 && c != nil {
					fp.Limits[src] = c
					fp.AwaitWatermark = true
				}
			}
		}
		fs.Phases = append(fs.Phases, fp)
	}
	return fs
}

// specWithSources is the scenario's job spec with each source's partitions
// set, and for StateLab (withLines) its first phase's lines: StateLab's
// topic holds them; Flink's source reads them from the input file.
func (sc *scenario) specWithSources(withLines bool) map[string]any {
	return sc.withSources(sc.spec, withLines)
}

// withSources is spec (the scenario's or a phase's changed job) with the
// scenario's cluster and source partitions (and lines, see specWithSources).
func (sc *scenario) withSources(job map[string]any, withLines bool) map[string]any {
	spec := deepCopy(job)
	// Chaining stated on every job, so that neither side depends on its
	// default (Flink's is on; flinkref chains only with chaining: true).
	if _, ok := spec["chaining"]; !ok {
		spec["chaining"] = false
	}
	// The same cluster on both: Flink's MiniCluster and StateLab's TaskManagers.
	tms := max(1, sc.taskManagers)
	cluster, _ := spec["cluster"].(map[string]any) // the spec's own cluster options (slotRequestTimeout) stay
	if cluster == nil {
		cluster = map[string]any{}
	}
	cluster["taskManagers"], cluster["slotsPerTaskManager"] = tms, sc.slots
	spec["cluster"] = cluster
	for _, op := range spec["operators"].([]any) {
		o := op.(map[string]any)
		if o["kind"] != "source" {
			continue
		}
		id := o["id"].(string)
		opts, _ := o["options"].(map[string]any)
		if opts == nil {
			opts = map[string]any{}
			o["options"] = opts
		}
		opts["partitions"] = sc.partitions[id]
		if withLines {
			opts["generator"] = "none"
			if ls := sc.lines[id]; len(ls) > 0 {
				opts["lines"] = ls[0]
				if sc.continuous {
					var all []string
					for _, l := range ls {
						all = append(all, l...)
					}
					opts["lines"] = all
				}
			}
		}
	}
	return spec
}

func copyMap(m map[string]int) map[string]int {
	c := make(map[string]int, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// judge compares StateLab with Flink field by field. In a pending scenario
// a difference is logged, not failed.
type judge struct {
	t       *testing.T
	pending string
	diffs   int
}

func (j *judge) equal(field string, statelab, flink any) {
	j.t.Helper()
	a, _ := json.Marshal(statelab)
	b, _ := json.Marshal(flink)
	if string(a) == string(b) {
		j.t.Logf("%s: same on both: %s", field, short(string(a)))
		return
	}
	j.diffs++
	msg := fmt.Sprintf("%s differs:\n  StateLab: %s\n  Flink:    %s", field, short(string(a)), short(string(b)))
	if j.pending != "" {
		j.t.Logf("%s\n  (pending: %s)", msg, j.pending)
		return
	}
	j.t.Error(msg)
}

// true checks a property that must hold on one side (Flink's or StateLab's).
func (j *judge) true(what string, ok bool, detail any) {
	j.t.Helper()
	if ok {
		return
	}
	j.diffs++
	msg := fmt.Sprintf("%s does not hold: %v", what, detail)
	if j.pending != "" {
		j.t.Logf("%s (pending: %s)", msg, j.pending)
		return
	}
	j.t.Error(msg)
}

func short(s string) string {
	if len(s) > 1500 {
		return s[:1500] + "…"
	}
	return s
}
