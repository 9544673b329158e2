package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/statelab/statelab/attach"
	"github.com/statelab/statelab/rescale"
)

func init() {
	register(command{name: "attach", summary: "read a real Flink job's key groups and checkpoints from its JobManager's REST API", run: runAttach})
}

// minAttachInterval keeps a mistyped --interval from hammering a production
// JobManager; Flink's own web UI refreshes every few seconds.
const minAttachInterval = 100 * time.Millisecond

var jobIDPattern = regexp.MustCompile(`^[0-9a-f]{32}$`)

// attachReport is what the readable report adds on request.
type attachReport struct {
	rescaleTo int // 0: no planner
	key       string
	keySet    bool
	keyType   attach.KeyType
}

func runAttach(ctx context.Context, args []string, io IO) int {
	fs := newFlagSet("attach")
	flinkURL := fs.String("flink", "", fmt.Sprintf("the JobManager's REST address, e.g. http://localhost:%d (required)", attach.DefaultRESTPort))
	once := fs.Bool("once", false, "read once, print, and exit (otherwise poll until Ctrl-C)")
	asJSON := fs.Bool("json", false, "print the fixed JSON document instead of the report (one per poll)")
	interval := fs.Duration("interval", 2*time.Second, "time between two readings when polling")
	timeout := fs.Duration("timeout", attach.DefaultTimeout, "give up on a request after this long")
	jobID := fs.String("job", "", "show only this job (32 hex digits, as in Flink's web UI)")
	maxPFallback := fs.String("max-parallelism", "", "for keyed vertices whose max parallelism Flink does not report (before 1.13): a number, or 'default' for Flink's default at the current parallelism")
	rescaleTo := fs.Int("rescale", 0, "report: plan a rescale of every keyed vertex to this parallelism")
	key := fs.String("key", "", "report: show which subtask of every keyed vertex holds this key")
	keyTypeFlag := fs.String("key-type", "string", "type of --key: string, int or long (java.lang.String / Integer / Long)")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	usage := func(format string, a ...any) int {
		code, _ := usageError(io, fs.Name(), format, a...)
		return code
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q (attach takes only flags)", fs.Arg(0))
	}
	if !flagSet(fs, "flink") {
		return usage("--flink is required: the JobManager's REST address, e.g. --flink http://localhost:%d", attach.DefaultRESTPort)
	}
	if _, err := attach.ParseAddress(*flinkURL); err != nil {
		return usage("%s", strings.TrimPrefix(err.Error(), "attach: "))
	}
	if *interval < minAttachInterval {
		return usage("--interval %v is below %v", *interval, minAttachInterval)
	}
	if *timeout <= 0 {
		return usage("--timeout %v must be positive", *timeout)
	}
	if *jobID != "" && !jobIDPattern.MatchString(*jobID) {
		return usage("--job %q is not a Flink job ID (32 lowercase hex digits)", *jobID)
	}
	fallback, err := attach.ParseMaxParallelismFallback(*maxPFallback)
	if err != nil {
		return usage("--max-parallelism: %s", strings.TrimPrefix(err.Error(), "rescale: "))
	}
	rep := attachReport{rescaleTo: *rescaleTo, key: *key, keySet: flagSet(fs, "key")}
	if rep.keyType, err = attach.ParseKeyType(*keyTypeFlag); err != nil {
		return usage("--key-type: %v", err)
	}
	if flagSet(fs, "rescale") && (*rescaleTo < 1 || *rescaleTo > rescale.UpperBoundMaxParallelism) {
		return usage("--rescale %d is not within 1..%d", *rescaleTo, rescale.UpperBoundMaxParallelism)
	}
	if *asJSON && (flagSet(fs, "rescale") || rep.keySet) {
		return usage("--rescale and --key add to the readable report; the --json document has a fixed shape, so drop --json or them")
	}

	client, err := attach.NewClient(*flinkURL, attach.WithTimeout(*timeout))
	if err != nil {
		return usage("%s", strings.TrimPrefix(err.Error(), "attach: "))
	}
	opts := attach.Options{JobID: *jobID, MaxParallelism: fallback}
	render := func(s attach.Snapshot) error {
		if *asJSON {
			enc := json.NewEncoder(io.Out)
			enc.SetEscapeHTML(false) // vertex names like "Source -> Map" stay readable
			return enc.Encode(s.Document())
		}
		return writeAttachReport(io.Out, s, rep)
	}

	if *once {
		s, err := client.Snapshot(ctx, opts)
		if err != nil {
			fmt.Fprintf(io.Err, "statelab attach: %v\n", err)
			return exitFail
		}
		printAttachWarnings(io.Err, s)
		if err := render(s); err != nil {
			fmt.Fprintf(io.Err, "statelab attach: write: %v\n", err)
			return exitFail
		}
		if *jobID != "" && len(s.Jobs) == 0 {
			return exitFail // the named job vanished; the warning said so
		}
		return exitOK
	}

	// Polling. The web UI's attach form is meant to drive the same Poller
	// and draw Snapshot instead of printing it.
	// Warnings repeat from one reading to the next; print them when they change.
	lastWarnings := ""
	p, err := attach.NewPoller(client, attach.PollerConfig{Interval: *interval, Options: opts,
		OnPoll: func(s attach.Snapshot, err error) {
			if err != nil {
				lastWarnings = ""
				fmt.Fprintf(io.Err, "statelab attach: %v (trying again every %v; Ctrl-C to stop)\n", err, *interval)
				return
			}
			var b strings.Builder
			printAttachWarnings(&b, s)
			if w := b.String(); w != lastWarnings {
				fmt.Fprint(io.Err, w)
				lastWarnings = w
			}
			if !*asJSON {
				fmt.Fprintf(io.Out, "=== %s ===\n", time.Now().UTC().Format(time.RFC3339))
			}
			if err := render(s); err != nil {
				fmt.Fprintf(io.Err, "statelab attach: write: %v\n", err)
			}
		}})
	if err != nil {
		return usage("%v", err)
	}
	if err := p.Start(ctx); err != nil {
		fmt.Fprintf(io.Err, "statelab attach: %v\n", err)
		return exitFail
	}
	<-ctx.Done()
	p.Stop()
	return exitOK
}

func printAttachWarnings(w io.Writer, s attach.Snapshot) {
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "statelab attach: warning: %s\n", warn.Message)
	}
}

// writeAttachReport prints the readable report: per job the graph, the
// key-group ranges of keyed vertices, the optional rescale plan and key
// lookup, and the checkpoint history with Flink's labels.
func writeAttachReport(w io.Writer, s attach.Snapshot, rep attachReport) error {
	out := bufio.NewWriter(w)
	fmt.Fprintf(out, "Flink JobManager %s: %d %s\n", s.Flink, len(s.Jobs), plural(len(s.Jobs), "job", "jobs"))
	for _, j := range s.Jobs {
		writeAttachJob(out, j, rep)
	}
	return out.Flush()
}

func writeAttachJob(out *bufio.Writer, j attach.Job, rep attachReport) {
	fmt.Fprintf(out, "\nJob %q (%s) %s\n", j.Name, j.ID, j.State)
	fmt.Fprintf(out, "  Job graph: %d %s, %d %s\n", len(j.Vertices), plural(len(j.Vertices), "vertex", "vertices"),
		len(j.Edges), plural(len(j.Edges), "edge", "edges"))
	names := map[string]string{}
	for _, v := range j.Vertices {
		names[v.ID] = v.Name
	}
	for _, v := range j.Vertices {
		keyed := ""
		if v.Keyed {
			keyed = ", keyed"
		}
		fmt.Fprintf(out, "    %s: parallelism %d, max parallelism %s%s\n", v.Name, v.Parallelism, maxPText(v), keyed)
		for _, e := range j.Edges {
			if e.Target != v.ID {
				continue
			}
			src := names[e.Source]
			if src == "" {
				src = e.Source
			}
			fmt.Fprintf(out, "      <- %s (%s)\n", src, e.ShipStrategy)
		}
	}
	for _, v := range j.Vertices {
		if !v.Keyed {
			continue
		}
		fmt.Fprintf(out, "  Key groups of %q (max parallelism %s, parallelism %d):\n", v.Name, maxPText(v), v.Parallelism)
		if len(v.KeyGroups) == 0 {
			fmt.Fprintf(out, "    unknown: see the warning above\n")
			continue
		}
		for _, kg := range v.KeyGroups {
			fmt.Fprintf(out, "    subtask %d: %s, %d key groups\n", kg.Subtask, kg.Range, kg.Range.Len())
		}
		if rep.rescaleTo > 0 {
			writeAttachRescale(out, v, rep.rescaleTo)
		}
		if rep.keySet {
			o, err := v.LocateKey(rep.keyType, rep.key)
			if err != nil {
				fmt.Fprintf(out, "    key %q: %s\n", rep.key, strings.TrimPrefix(err.Error(), "rescale: "))
			} else {
				fmt.Fprintf(out, "    key %q (%s, Java hashCode %d): key group %d, subtask %d\n", o.Key, o.Type, o.HashCode, o.KeyGroup, o.Subtask)
			}
		}
	}
	writeAttachCheckpoints(out, j.Checkpoints)
}

func writeAttachRescale(out *bufio.Writer, v attach.Vertex, to int) {
	plan, err := v.RescalePlan(to)
	if err != nil {
		fmt.Fprintf(out, "    rescale to %d: %s\n", to, strings.TrimPrefix(err.Error(), "rescale: "))
		return
	}
	var moved []string
	for _, r := range attach.Runs(plan.Moved) {
		moved = append(moved, r.String())
	}
	fmt.Fprintf(out, "    rescale %d -> %d: %d of %d key groups move", plan.From, plan.To, len(plan.Moved), plan.MaxParallelism)
	if len(moved) > 0 {
		fmt.Fprintf(out, ": %s", strings.Join(moved, " "))
	}
	fmt.Fprintln(out)
	for _, a := range plan.Subtasks {
		var reads []string
		for _, r := range a.Reads {
			reads = append(reads, fmt.Sprintf("%s from old subtask %d", r.Range, r.OldSubtask))
		}
		fmt.Fprintf(out, "      new subtask %d %s reads %s\n", a.Subtask, a.Range, strings.Join(reads, ", "))
	}
}

func writeAttachCheckpoints(out *bufio.Writer, c attach.Checkpoints) {
	if !c.Enabled {
		fmt.Fprintf(out, "  Checkpoints: checkpointing is not enabled for this job\n")
		return
	}
	n := c.Counts
	fmt.Fprintf(out, "  Checkpoints: %s %d, %s %d, %s %d, %s %d, %s %d\n",
		attach.LabelTriggered, n.Total, attach.LabelInProgress, n.InProgress, attach.LabelCompleted, n.Completed,
		attach.LabelFailed, n.Failed, attach.LabelRestored, n.Restored)
	if r := c.LatestRestored; r != nil {
		kind := "checkpoint"
		if r.Savepoint {
			kind = "savepoint"
		}
		fmt.Fprintf(out, "    %s: %s %d at %s", attach.LabelLatestRestore, kind, r.ID, millisText(r.RestoreTimestamp))
		if r.ExternalPath != "" {
			fmt.Fprintf(out, " from %s", r.ExternalPath)
		}
		fmt.Fprintln(out)
	}
	timeline := c.Timeline()
	if len(timeline) == 0 {
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "    ID\tStatus\tType\t%s\t%s\t%s\t%s\t%s\n", attach.LabelAcknowledged, attach.LabelTriggerTime,
		attach.LabelEndToEndDuration, attach.LabelCheckpointedDataSize, attach.LabelFullCheckpointDataSize)
	for _, cp := range timeline {
		full := "-"
		if cp.FullSize >= 0 {
			full = bytesText(cp.FullSize)
		}
		fmt.Fprintf(tw, "    %d\t%s\t%s\t%d/%d\t%s\t%s\t%s\t%s\n", cp.ID, cp.Status, cp.Type, cp.NumAcknowledged, cp.NumSubtasks,
			millisText(cp.TriggerTimestamp), (time.Duration(cp.EndToEndDuration) * time.Millisecond).String(),
			bytesText(cp.CheckpointedSize), full)
	}
	_ = tw.Flush()
	for _, cp := range timeline {
		if cp.FailureMessage != "" {
			fmt.Fprintf(out, "    checkpoint %d failed: %s\n", cp.ID, cp.FailureMessage)
		}
	}
}

func maxPText(v attach.Vertex) string {
	switch {
	case v.MaxParallelism == 0:
		return "unknown"
	case v.MaxParallelismSource == attach.SourceFlag || v.MaxParallelismSource == attach.SourceFlinkDefault:
		return fmt.Sprintf("%d (%s)", v.MaxParallelism, v.MaxParallelismSource)
	}
	return fmt.Sprint(v.MaxParallelism)
}

// millisText shows a Flink timestamp (Unix milliseconds) in UTC.
func millisText(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
}

// bytesText shows a size in binary units, as Flink's web UI does.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
