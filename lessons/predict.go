package lessons

import (
	"fmt"
	"html"
	"regexp"
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
// (the rescale package, which the engine uses), from the job the step meets.
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
	//     SPLIT_DISTRIBUTE); a number from 0 to Max, the partitions.
	Kind        string
	Operator    string
	Key         string
	Parallelism int
	From, To    int
	Subtask     int
	// Choices are what the learner picks from ("count#0", …), nil when the
	// answer is a number up to Max; Answer is the right one.
	Choices []string
	Max     int
	Answer  string
}

// predictFile is a step's predict: as written in scenario.yaml.
type predictFile struct {
	Kind        string `yaml:"kind"`
	Operator    string `yaml:"operator"`
	Key         string `yaml:"key"`
	Parallelism int    `yaml:"parallelism"`
	From        int    `yaml:"from"`
	To          int    `yaml:"to"`
	Subtask     int    `yaml:"subtask"`
}

// newPrediction checks pf against the job the step meets and computes the
// answer.
func newPrediction(pf *predictFile, js *jobState) (*Prediction, error) {
	switch pf.Kind {
	case "key-owner", "key-groups-moved":
	case "offsets-split":
		return offsetsSplit(pf, js)
	default:
		return nil, fmt.Errorf("predict: kind %q is unknown (known: key-owner, key-groups-moved, offsets-split)", pf.Kind)
	}
	var maxP int
	found := false
	for _, o := range js.spec.Operators {
		if o.ID == pf.Operator {
			found = true
			maxP = o.MaxParallelism
			if maxP == 0 {
				maxP = rescale.DefaultMaxParallelism(o.Parallelism)
			}
		}
	}
	if !found {
		return nil, fmt.Errorf("predict: the job has no operator %q (operators: %s)", pf.Operator, js.operatorIDs())
	}
	if pf.Kind == "key-groups-moved" {
		plan, err := rescale.NewPlan(maxP, pf.From, pf.To)
		if err != nil {
			return nil, fmt.Errorf("predict: key-groups-moved from %d to %d: %v", pf.From, pf.To, err)
		}
		return &Prediction{Kind: pf.Kind, Operator: pf.Operator, From: pf.From, To: pf.To, Max: maxP, Answer: strconv.Itoa(len(plan.Moved))}, nil
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
var predictLabels = map[Lang]struct{ legend, commit, committed, yours, engine, right, wrong, none, number string }{
	EN: {"Predict first", "Commit my answer", "Your answer is in. Now do the step.", "Your answer:", "The engine:", "Right.", "Not this time — here is why.", "(none)", "your answer"},
	ZH: {"先预测", "提交我的答案", "答案已提交。现在完成这一步。", "你的答案：", "引擎的结果：", "答对了。", "这次没猜中——原因如下。", "（未作答）", "你的答案"},
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
	for _, c := range p.Choices {
		fmt.Fprintf(&b, `<label><input type="radio" name="answer" value="%s"> <code>%s</code></label> `, e(c), e(c))
	}
	if p.Choices == nil {
		fmt.Fprintf(&b, `<label><input type="number" name="answer" min="0" max="%d" step="1" inputmode="numeric" required> %s</label>`, p.Max, e(lb.number))
	}
	fmt.Fprintf(&b, `</p><button type="submit" class="button predict-commit">%s</button>`, e(lb.commit))
	fmt.Fprintf(&b, `<p class="predict-committed" hidden>%s</p></fieldset>`, e(lb.committed))
	fmt.Fprintf(&b, `<div class="predict-result" hidden><p>%s <b class="predict-mine">%s</b> · %s <b class="predict-engine"><code>%s</code></b> `,
		e(lb.yours), e(lb.none), e(lb.engine), e(p.Answer))
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
