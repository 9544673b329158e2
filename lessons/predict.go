package lessons

import (
	"fmt"
	"html"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/rescale"
)

// Prediction is a question a step asks before its action (issue 19, "predict
// first"): the learner commits an answer in the lesson card, acts, and when
// the step is done sees the engine's answer beside theirs, with the why.
// It never blocks: the step ticks whatever the learner answered, or if they
// did not answer at all.
//
// The answer is not written by hand: it is computed with Flink's own rules
// (the rescale package, which the engine uses, and the engine's own region
// and slot rules), from the job the step meets — after the resets that open
// the step, before its other actions.
type Prediction struct {
	// Kind is the question:
	//   - "key-owner": which subtask of Operator owns Key at Parallelism
	//     (KeyGroupRangeAssignment.assignKeyToParallelOperator); the learner
	//     picks one of Choices;
	//   - "key-groups-moved": how many of Operator's key groups change
	//     subtask when it is rescaled From → To (StateAssignmentOperation's
	//     ranges); the learner types a number from 0 to Max;
	//   - "offsets-split": how many of source Operator's partition offsets
	//     (one list-state element per partition) subtask Subtask restores
	//     at Parallelism (RoundRobinOperatorStateRepartitioner,
	//     SPLIT_DISTRIBUTE); a number from 0 to Max, the partitions;
	//   - "union-restore": how many elements of Operator's union list state
	//     each new subtask restores when it goes to Parallelism (UNION: every
	//     subtask receives every element; a tally keeps one element per
	//     subtask, a union source one per partition); a number;
	//   - "duplicates": will a failure of the job as it is make Sink hold
	//     duplicate results (yes/no): no only when the sink commits
	//     transactionally (two-phase commit, exactly-once) and checkpoints
	//     are exactly-once (aligned barriers); else replaying from the last
	//     checkpoint (or from the start) writes results again;
	//   - "rescale-accepted": will rescaling Operator to Parallelism be
	//     accepted (yes/no): not above its max parallelism (the number of
	//     key groups) nor above Flink's cap of 32768;
	//   - "slots-needed": how many slots the job needs with Operator at
	//     Parallelism (one slot sharing group, Flink's default: the highest
	//     parallelism of any operator); a number;
	//   - "restarted-subtasks": how many subtasks restart when subtask
	//     Subtask of Operator fails (Flink's region failover,
	//     RestartPipelinedRegionFailoverStrategy: the failed subtask's
	//     pipelined region; every subtask under failover: full); a number;
	//   - "job-fails": will the job end FAILED at its Failures-th failure
	//     (yes/no), counted from its start, failures well apart, under its
	//     restart strategy (RestartBackoffTimeStrategyFactoryLoader's choice:
	//     none gives up at once, fixed-delay after its attempts, failure-rate
	//     after its max failures per interval, exponential-delay after its
	//     attempts when they are limited);
	//   - "restores-locally": will the restore after this failure read the
	//     keyed state from the TaskManagers' local copies (yes/no): only with
	//     state.backend.local-recovery on, and only when the failure leaves
	//     the TaskManager (and its disk) alive — a crashed subtask, not a lost
	//     TaskManager (TaskManager set). A lost TaskManager is answered when
	//     the restarted subtasks with keyed state all ran on it (no) or none
	//     did (yes), and refused when the restore is partly local
	//     (restoresLocally);
	//   - "upgrade-accepted": will the step's upgrade action start the
	//     changed job from the savepoint (yes/no), as
	//     Checkpoints.loadAndValidateCheckpoint decides: no when state of
	//     the savepoint finds no operator with its ID and
	//     allowNonRestoredState is not set (lessons/upgrade.go);
	//   - "ttl-read": will the next read of a key of Operator whose state
	//     has expired (last access plus the TTL passed) but not been
	//     cleaned up return the old value (yes/no), as Flink's
	//     StateTtlConfig.StateVisibility says: never with
	//     NeverReturnExpired (the default); with ReturnExpiredIfNotCleanedUp
	//     only when no cleanup strategy can have removed it first, which the
	//     lint requires (ttlCleanupSize below 0), else the answer would
	//     depend on when cleanup ran.
	Kind        string
	Operator    string
	Key         string
	Parallelism int
	From, To    int
	Subtask     int
	Failures    int
	// Choices are what the learner picks from ("count#0", "yes", …), nil
	// when the answer is a number up to Max; Answer is the right one.
	Choices []string
	Max     int
	Answer  string
}

// Yes and No are the choices of a yes/no prediction.
const (
	Yes = "yes"
	No  = "no"
)

// PredictKinds lists the prediction kinds, for errors and the docs.
var PredictKinds = []string{"key-owner", "key-groups-moved", "offsets-split", "union-restore", "duplicates", "rescale-accepted", "slots-needed", "restarted-subtasks", "job-fails", "restores-locally", "upgrade-accepted", "ttl-read"}

// predictFile is a step's predict: as written in scenario.yaml.
type predictFile struct {
	Kind        string `yaml:"kind"`
	Operator    string `yaml:"operator"`
	Key         string `yaml:"key"`
	Parallelism int    `yaml:"parallelism"`
	From        int    `yaml:"from"`
	To          int    `yaml:"to"`
	Subtask     int    `yaml:"subtask"`
	Sink        string `yaml:"sink"`
	Failures    int    `yaml:"failures"`
	TaskManager string `yaml:"taskManager"`
	// upgrade is the arguments of the step's upgrade action, which an
	// "upgrade-accepted" prediction asks about (set by the loader).
	upgrade map[string]any
}

func yesNo(b bool) string {
	if b {
		return Yes
	}
	return No
}

// maxParallelismOf returns the operator's max parallelism (its own, or
// Flink's default for its parallelism) and whether the job has it.
func (js *jobState) maxParallelismOf(id string) (*engine.OperatorSpec, int, bool) {
	for i := range js.spec.Operators {
		o := &js.spec.Operators[i]
		if o.ID == id {
			maxP := o.MaxParallelism
			if maxP == 0 {
				maxP = rescale.DefaultMaxParallelism(o.Parallelism)
			}
			return o, maxP, true
		}
	}
	return nil, 0, false
}

// parOf is the operator's parallelism where the step meets the job.
func (js *jobState) parOf(o *engine.OperatorSpec) int {
	if p, ok := js.par[o.ID]; ok {
		return p
	}
	return o.Parallelism
}

// newPrediction checks pf against the job the step meets and computes the
// answer.
func newPrediction(pf *predictFile, js *jobState) (*Prediction, error) {
	switch pf.Kind {
	case "offsets-split":
		return offsetsSplit(pf, js)
	case "duplicates":
		return duplicates(pf, js)
	case "job-fails":
		return jobFails(pf, js)
	case "upgrade-accepted":
		return upgradeAccepted(pf, js)
	case "ttl-read":
		return ttlRead(pf, js)
	case "restores-locally":
		return restoresLocally(pf, js)
	case "key-owner", "key-groups-moved", "union-restore", "rescale-accepted", "slots-needed", "restarted-subtasks":
	default:
		return nil, fmt.Errorf("predict: kind %q is unknown (known: %s)", pf.Kind, strings.Join(PredictKinds, ", "))
	}
	o, maxP, found := js.maxParallelismOf(pf.Operator)
	if !found {
		return nil, fmt.Errorf("predict: the job has no operator %q (operators: %s)", pf.Operator, js.operatorIDs())
	}
	switch pf.Kind {
	case "key-groups-moved":
		plan, err := rescale.NewPlan(maxP, pf.From, pf.To)
		if err != nil {
			return nil, fmt.Errorf("predict: key-groups-moved from %d to %d: %v", pf.From, pf.To, err)
		}
		return &Prediction{Kind: pf.Kind, Operator: pf.Operator, From: pf.From, To: pf.To, Max: maxP, Answer: strconv.Itoa(len(plan.Moved))}, nil
	case "union-restore":
		return unionRestore(pf, js, o)
	case "rescale-accepted":
		if pf.Parallelism < 1 {
			return nil, fmt.Errorf("predict: rescale-accepted needs a parallelism of 1 or more")
		}
		ok := pf.Parallelism <= maxP && pf.Parallelism <= rescale.UpperBoundMaxParallelism
		return &Prediction{Kind: pf.Kind, Operator: pf.Operator, Parallelism: pf.Parallelism, Choices: []string{Yes, No}, Answer: yesNo(ok)}, nil
	case "slots-needed":
		if pf.Parallelism < 1 || pf.Parallelism > maxP {
			return nil, fmt.Errorf("predict: parallelism %d is not within 1..%d (the max parallelism of %s)", pf.Parallelism, maxP, pf.Operator)
		}
		need, total := 0, 0
		for i := range js.spec.Operators {
			x := &js.spec.Operators[i]
			p := js.parOf(x)
			if x.ID == pf.Operator {
				p = pf.Parallelism
			}
			need = max(need, p)
			total += p
		}
		return &Prediction{Kind: pf.Kind, Operator: pf.Operator, Parallelism: pf.Parallelism, Max: total, Answer: strconv.Itoa(need)}, nil
	case "restarted-subtasks":
		return restartedSubtasks(pf, js, o)
	}
	if pf.Key == "" {
		return nil, fmt.Errorf("predict: key-owner needs a key")
	}
	if pf.Parallelism < 1 || pf.Parallelism > maxP {
		return nil, fmt.Errorf("predict: parallelism %d is not within 1..%d (the max parallelism of %s)", pf.Parallelism, maxP, pf.Operator)
	}
	p := &Prediction{Kind: pf.Kind, Operator: pf.Operator, Key: pf.Key, Parallelism: pf.Parallelism}
	for i := 0; i < pf.Parallelism; i++ {
		p.Choices = append(p.Choices, pf.Operator+"#"+strconv.Itoa(i))
	}
	kg := rescale.KeyGroupForString(pf.Key, maxP)
	p.Answer = p.Choices[rescale.OperatorIndexForKeyGroup(maxP, pf.Parallelism, kg)]
	return p, nil
}

// duplicates answers "duplicates": a transactional sink (pre-commit on the
// barrier, commit when the checkpoint completes: Flink's
// TwoPhaseCommitSinkFunction / KafkaSink with DeliveryGuarantee.EXACTLY_ONCE)
// under exactly-once checkpoints never shows a replayed result; an
// at-least-once sink writes every record as it comes, so the records
// replayed after a restore are written again; and at-least-once
// checkpoints (no alignment) let a snapshot include records that are
// replayed after the restore.
func duplicates(pf *predictFile, js *jobState) (*Prediction, error) {
	var sink *engine.OperatorSpec
	var sinks []string
	for i := range js.spec.Operators {
		o := &js.spec.Operators[i]
		if o.Kind != engine.KindSink {
			continue
		}
		sinks = append(sinks, o.ID)
		if pf.Sink == "" || pf.Sink == o.ID {
			if sink == nil {
				sink = o
			}
		}
	}
	if sink == nil {
		return nil, fmt.Errorf("predict: duplicates: the job has no sink %q (sinks: %s)", pf.Sink, strings.Join(sinks, ", "))
	}
	sem := engine.SinkExactlyOnce
	if s, ok := sink.Options["semantics"].(string); ok {
		sem = s
	}
	// With no checkpoint interval barriers are counted, not aligned, whatever
	// the mode (engine's CheckpointingSpec.BarrierMode, as Flink does).
	exact := sem == engine.SinkExactlyOnce && js.spec.Checkpointing.BarrierMode() != engine.AtLeastOnce
	return &Prediction{Kind: pf.Kind, Operator: sink.ID, Choices: []string{Yes, No}, Answer: yesNo(!exact)}, nil
}

// unionRestore answers "union-restore": under UNION every new subtask
// receives the whole list, all the old subtasks' elements.
func unionRestore(pf *predictFile, js *jobState, o *engine.OperatorSpec) (*Prediction, error) {
	var elems int
	switch {
	case o.Kind == engine.KindTally:
		elems = js.parOf(o) // one tally entry per subtask
	case o.Kind == engine.KindSource && o.Options["offsets"] == engine.OffsetsUnion:
		elems = sourcePartitions(o)
	default:
		return nil, fmt.Errorf("predict: union-restore needs an operator with union list state (a tally, or a source with offsets: union); %s is a %s", o.ID, o.Kind)
	}
	if pf.Parallelism < 1 {
		return nil, fmt.Errorf("predict: union-restore needs a parallelism of 1 or more")
	}
	return &Prediction{Kind: pf.Kind, Operator: o.ID, Parallelism: pf.Parallelism, Max: max(elems*2, 10), Answer: strconv.Itoa(elems)}, nil
}

// restartedSubtasks answers "restarted-subtasks" with the engine's regions
// (JobSpec.PipelinedRegions, Flink's SchedulingPipelinedRegionComputeUtil).
func restartedSubtasks(pf *predictFile, js *jobState, o *engine.OperatorSpec) (*Prediction, error) {
	par := map[string]int{}
	total := 0
	for i := range js.spec.Operators {
		x := &js.spec.Operators[i]
		par[x.ID] = js.parOf(x)
		total += par[x.ID]
	}
	if pf.Subtask < 0 || pf.Subtask >= par[o.ID] {
		return nil, fmt.Errorf("predict: restarted-subtasks: %s has %d subtasks here, so subtask %d does not exist", o.ID, par[o.ID], pf.Subtask)
	}
	n := total
	if js.spec.Cluster.Failover != engine.FailoverFull {
		name := o.ID + "#" + strconv.Itoa(pf.Subtask)
		for _, reg := range js.spec.PipelinedRegions(par) {
			if slices.Contains(reg, name) {
				n = len(reg)
			}
		}
	}
	return &Prediction{Kind: pf.Kind, Operator: o.ID, Subtask: pf.Subtask, Max: total, Answer: strconv.Itoa(n)}, nil
}

var (
	predictOpen = regexp.MustCompile(`^>\s*\[!predict\]\s*$`)
	whyOpen     = regexp.MustCompile(`^>\s*\[!why\]\s*$`)
)

// takeBlock takes the block quotes opened by open ("> [!predict]") out of
// text; it returns the rest, the blocks' Markdown and how many there were.
func takeBlock(text string, open *regexp.Regexp) (rest, block string, n int) {
	lines := strings.Split(text, "\n")
	var out, b []string
	for i := 0; i < len(lines); i++ {
		if !open.MatchString(strings.TrimSpace(lines[i])) {
			out = append(out, lines[i])
			continue
		}
		n++
		j := i + 1
		for ; j < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[j]), ">"); j++ {
			l := strings.TrimPrefix(strings.TrimSpace(lines[j]), ">")
			b = append(b, strings.TrimPrefix(l, " "))
		}
		i = j - 1
	}
	return strings.TrimSpace(strings.Join(out, "\n")), strings.TrimSpace(strings.Join(b, "\n")), n
}

// predictLabels are the prediction card's words.
var predictLabels = map[Lang]struct{ legend, commit, committed, yours, engine, right, wrong, none, number, yes, no string }{
	EN: {"Predict first", "Commit my answer", "Your answer is in. Now do the step.", "Your answer:", "The engine:", "Right.", "Not this time — here is why.", "(none)", "your answer", "Yes", "No"},
	ZH: {"先预测", "提交我的答案", "答案已提交。现在完成这一步。", "你的答案：", "引擎的结果：", "答对了。", "这次没猜中——原因如下。", "（未作答）", "你的答案", "会", "不会"},
}

// predictHTML renders the prediction card of a step: the question, one
// choice per answer, a commit button, and the result (the engine's answer
// and the why), hidden until the step is done. lesson.js wires it.
func predictHTML(lang Lang, stepID string, p *Prediction, questionHTML, whyHTML string) string {
	lb, ok := predictLabels[lang]
	if !ok {
		lb = predictLabels[EN]
	}
	e := html.EscapeString
	var b strings.Builder
	fmt.Fprintf(&b, `<form class="predict" data-predict="%s" data-step-id="%s"><fieldset><legend>%s</legend>`, e(p.Answer), e(stepID), e(lb.legend))
	fmt.Fprintf(&b, `<div class="predict-question">%s</div><p class="predict-choices">`, questionHTML)
	shown := func(c string) string { return `<code>` + e(c) + `</code>` }
	if slices.Equal(p.Choices, []string{Yes, No}) {
		shown = func(c string) string {
			if c == Yes {
				return e(lb.yes)
			}
			return e(lb.no)
		}
	}
	for _, c := range p.Choices {
		fmt.Fprintf(&b, `<label><input type="radio" name="answer" value="%s"> <span class="predict-choice">%s</span></label> `, e(c), shown(c))
	}
	if p.Choices == nil {
		fmt.Fprintf(&b, `<label><input type="number" name="answer" min="0" max="%d" step="1" inputmode="numeric" required> %s</label>`, p.Max, e(lb.number))
	}
	fmt.Fprintf(&b, `</p><button type="submit" class="button predict-commit">%s</button>`, e(lb.commit))
	fmt.Fprintf(&b, `<p class="predict-committed" hidden>%s</p></fieldset>`, e(lb.committed))
	answer := `<code>` + e(p.Answer) + `</code>`
	if p.Choices != nil {
		answer = shown(p.Answer)
	}
	fmt.Fprintf(&b, `<div class="predict-result" hidden><p>%s <b class="predict-mine">%s</b> · %s <b class="predict-engine">%s</b> `,
		e(lb.yours), e(lb.none), e(lb.engine), answer)
	fmt.Fprintf(&b, `<span class="predict-right" hidden>%s</span><span class="predict-wrong" hidden>%s</span></p>`, e(lb.right), e(lb.wrong))
	fmt.Fprintf(&b, `<div class="predict-why">%s</div></div></form>`, whyHTML)
	return b.String()
}

// offsetsSplit answers "offsets-split": the source's offsets list state, one
// element per partition, repartitioned with Flink's round-robin rule.
func offsetsSplit(pf *predictFile, js *jobState) (*Prediction, error) {
	var parts int
	found := false
	for _, o := range js.spec.Operators {
		if o.ID == pf.Operator && o.Kind == engine.KindSource {
			found = true
			parts = o.Parallelism // the engine's default: one partition per subtask
			if n, err := argInt(o.Options, "partitions"); err == nil && o.Options["partitions"] != nil {
				parts = n
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("predict: offsets-split needs a source; the job has no source %q (operators: %s)", pf.Operator, js.operatorIDs())
	}
	if pf.Parallelism < 1 || pf.Subtask < 0 || pf.Subtask >= pf.Parallelism {
		return nil, fmt.Errorf("predict: offsets-split: subtask %d of parallelism %d does not exist", pf.Subtask, pf.Parallelism)
	}
	elems := make([]int, parts)
	for i := range elems {
		elems[i] = i
	}
	old := []rescale.SubtaskState[int]{{{Name: "offsets", Mode: rescale.SplitDistribute, Elements: elems}}}
	got, err := rescale.Repartition(old, pf.Parallelism)
	if err != nil {
		return nil, fmt.Errorf("predict: offsets-split: %v", err)
	}
	return &Prediction{Kind: pf.Kind, Operator: pf.Operator, Parallelism: pf.Parallelism, Subtask: pf.Subtask, Max: parts,
		Answer: strconv.Itoa(len(got[pf.Subtask]["offsets"]))}, nil
}

// jobFails answers "job-fails" with the job's effective restart strategy
// (JobSpec.Effective: the configured one with Flink's defaults, or
// exponential-delay with periodic checkpoints, none without).
func jobFails(pf *predictFile, js *jobState) (*Prediction, error) {
	if pf.Failures < 1 {
		return nil, fmt.Errorf("predict: job-fails needs failures: the failure to ask about, from 1")
	}
	r := js.spec.Effective()
	fails := false
	switch r.Strategy {
	case engine.RestartNone:
		fails = true
	case engine.RestartFixedDelay, engine.RestartFailureRate:
		fails = pf.Failures > r.Attempts
	case engine.RestartExponentialDelay:
		fails = r.Attempts != engine.UnlimitedAttempts && pf.Failures > r.Attempts
	}
	return &Prediction{Kind: pf.Kind, Failures: pf.Failures, Choices: []string{Yes, No}, Answer: yesNo(fails)}, nil
}

// ttlRead answers "ttl-read" from the operator's TTL options (Flink's
// StateTtlConfig: setStateVisibility; AbstractTtlDecorator.getWithTtlCheckAndUpdate
// returns an expired value only with ReturnExpiredIfNotCleanedUp, and
// clears it either way).
func ttlRead(pf *predictFile, js *jobState) (*Prediction, error) {
	o, _, found := js.maxParallelismOf(pf.Operator)
	if !found {
		return nil, fmt.Errorf("predict: the job has no operator %q (operators: %s)", pf.Operator, js.operatorIDs())
	}
	if _, ok := o.Options["ttl"]; !ok {
		return nil, fmt.Errorf("predict: ttl-read: operator %s has no state TTL (set its option ttl)", o.ID)
	}
	visible := false
	switch v, _ := o.Options["ttlStateVisibility"].(string); v {
	case "", "NeverReturnExpired":
	case "ReturnExpiredIfNotCleanedUp":
		size, _ := toInt(o.Options["ttlCleanupSize"])
		full, _ := o.Options["ttlCleanupFullSnapshot"].(bool)
		if size >= 0 || full {
			return nil, fmt.Errorf("predict: ttl-read: %s returns an expired value only if no cleanup removed it first, which depends on when cleanup ran; turn cleanup off (ttlCleanupSize: -1, no ttlCleanupFullSnapshot) or use NeverReturnExpired", o.ID)
		}
		visible = true
	default:
		return nil, fmt.Errorf("predict: ttl-read: %s has the unknown ttlStateVisibility %q", o.ID, v)
	}
	return &Prediction{Kind: pf.Kind, Operator: o.ID, Choices: []string{Yes, No}, Answer: yesNo(visible)}, nil
}

// restoresLocally answers "restores-locally". Without
// state.backend.local-recovery every restore reads checkpoint storage: no.
// With it, a crashed subtask (no TaskManager lost) restarts in its previous
// slot on the same TaskManager (PreviousAllocationSlotSelectionStrategy) and
// reads its local copy: yes. A lost TaskManager takes its disk and the
// copies on it: its subtasks restart on the other TaskManagers and read
// checkpoint storage, while the restarted subtasks of the TaskManagers that
// survive keep their slots and read their local copies. Which subtasks
// restart is the union of the pipelined regions of the lost TaskManager's
// subtasks (every subtask under full failover or in reactive mode), as the
// engine's regionsOf and Flink's RestartPipelinedRegionFailoverStrategy
// give it; which of them hold keyed state follows from their operators. The
// answer is no when every restarted subtask with keyed state ran on the lost
// TaskManager, yes when none did; when some did and some did not, the
// restore is partly local, neither yes nor no, and the question is refused,
// as it is for a lost TaskManager that runs no subtask (nothing restores),
// for a restart that restores no keyed state, and for a cluster left with
// too few slots (the job waits instead of restoring).
//
// The placement is the job's first one, as the engine makes it
// (core.assignSlots): slot sharing needs as many slots as the highest
// parallelism (in reactive mode every slot), and the subtasks of index i
// share the i-th slot, tm-1's slots first. With local recovery a restart
// keeps every subtask in its previous slot and a rescale keeps each index's
// slot, so the placement holds until a TaskManager is lost; a lesson that
// asks after an earlier lost TaskManager is not covered. Like the yes for a
// crashed subtask, the answer takes it that a checkpoint (not a savepoint)
// completed since the job last started and that each keyed subtask holds
// state in it.
func restoresLocally(pf *predictFile, js *jobState) (*Prediction, error) {
	yn := func(b bool) (*Prediction, error) {
		return &Prediction{Kind: pf.Kind, Choices: []string{Yes, No}, Answer: yesNo(b)}, nil
	}
	if !js.spec.Checkpointing.LocalRecovery {
		return yn(false)
	}
	if pf.TaskManager == "" {
		return yn(true)
	}
	const refused = "For a lost TaskManager this prediction is answered only when the restarted subtasks that hold keyed state all ran on it (no) or none did (yes)"
	per := js.spec.Cluster.SlotsPerTaskManager
	par := map[string]int{}
	need := 0
	for i := range js.spec.Operators {
		o := &js.spec.Operators[i]
		par[o.ID] = js.parOf(o)
		need = max(need, par[o.ID])
	}
	if js.spec.Cluster.Reactive {
		need = js.tms * per
	}
	k, err := strconv.Atoi(strings.TrimPrefix(pf.TaskManager, "tm-"))
	if err != nil || !strings.HasPrefix(pf.TaskManager, "tm-") || k < 1 || k > js.tms {
		return nil, fmt.Errorf("predict: restores-locally: unknown TaskManager %q (the job starts on tm-1..tm-%d)", pf.TaskManager, js.tms)
	}
	// Slot index i is on TaskManager i/per + 1.
	lost := func(i int) bool { return i/per+1 == k }
	failed := map[string]bool{}
	for _, o := range js.spec.Operators {
		for i := range par[o.ID] {
			if lost(i) {
				failed[fmt.Sprintf("%s#%d", o.ID, i)] = true
			}
		}
	}
	if len(failed) == 0 {
		return nil, fmt.Errorf("predict: restores-locally with %s lost: the subtasks take slots 0..%d, tm-1's first, %d per TaskManager, so none runs on %s and losing it restores nothing. %s", pf.TaskManager, need-1, per, pf.TaskManager, refused)
	}
	if (js.tms-1)*per < need {
		return nil, fmt.Errorf("predict: restores-locally with %s lost: the job needs %d slots and the other TaskManagers offer %d, so it waits for resources instead of restoring. %s", pf.TaskManager, need, (js.tms-1)*per, refused)
	}
	restarted := map[string]bool{}
	if js.spec.Cluster.Reactive || js.spec.Cluster.Failover == engine.FailoverFull {
		for _, o := range js.spec.Operators {
			for i := range par[o.ID] {
				restarted[fmt.Sprintf("%s#%d", o.ID, i)] = true
			}
		}
	} else {
		for _, region := range js.spec.PipelinedRegions(par) {
			if slices.ContainsFunc(region, func(n string) bool { return failed[n] }) {
				for _, n := range region {
					restarted[n] = true
				}
			}
		}
	}
	var remote, local []string
	for _, o := range js.spec.Operators {
		if !keyedKind(o.Kind) {
			continue
		}
		for i := range par[o.ID] {
			n := fmt.Sprintf("%s#%d", o.ID, i)
			switch {
			case !restarted[n]:
			case lost(i):
				remote = append(remote, n)
			default:
				local = append(local, n)
			}
		}
	}
	switch {
	case len(remote) > 0 && len(local) > 0:
		return nil, fmt.Errorf("predict: restores-locally with %s lost: %s ran there and restore from checkpoint storage, while %s keep their slots on the other TaskManagers and read their local copies, so the restore is partly local, neither yes nor no. %s", pf.TaskManager, strings.Join(remote, ", "), strings.Join(local, ", "), refused)
	case len(remote)+len(local) == 0:
		return nil, fmt.Errorf("predict: restores-locally with %s lost: no restarted subtask holds keyed state, so the restore reads none. %s", pf.TaskManager, refused)
	}
	return yn(len(remote) == 0)
}
