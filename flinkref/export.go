package flinkref

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"

	"github.com/statelab/statelab/engine"
)

// Export writes, through put, a Maven project that runs spec on Apache Flink
// with the DataStream API: flinkref's sources (pom.xml renamed to
// statelab-job), job.json (the spec), input.json (each source partition's
// records in offset order, as the engine's topics hold them) and a README on
// building it and running it with flink run. `statelab export-flink` writes
// it to a directory, the sandbox's "Export as a Flink project" to a zip.
//
// A job whose sources hold more than maxRecords records, or whose source
// keeps its offsets in union list state (Flink's FLIP-27 sources keep splits
// split-distributed, so there is no equivalent), is refused with the reason.
// An alerts operator that times out on processing time (timeDomain:
// processing) runs as Flink's processing-time CountWithTimeoutFunction; its
// sources then wait before they end their input (JobBuilder.procTimeLinger),
// since Flink drops processing-time timers still pending when a bounded
// input ends.
func Export(spec *engine.JobSpec, maxRecords int, put func(path string, data []byte) error) error {
	return ExportRun(spec, nil, maxRecords, put)
}

// ExportRun is Export for a run: input.json also holds the records its
// inject commands appended to each source (lines a learner typed in), each
// in the partition and with the timestamp the engine gave it
// (engine.TopicRecordsWithTyped); log is the run's command log
// (Snapshot.Commands). The sandbox's "Export to Flink" exports its run.
func ExportRun(spec *engine.JobSpec, log []engine.LoggedCommand, maxRecords int, put func(path string, data []byte) error) error {
	for _, o := range spec.Operators {
		if o.Kind == engine.KindSource {
			if m, _ := o.Options["offsets"].(string); m == engine.OffsetsUnion {
				return fmt.Errorf("source %s keeps its offsets in union list state; Flink's FLIP-27 sources keep splits split-distributed, so the export has no equivalent", o.ID)
			}
		}
	}
	input := map[string][][]map[string]any{}
	total, typed := 0, 0
	for _, o := range spec.Operators {
		if o.Kind != engine.KindSource {
			continue
		}
		for _, lc := range log {
			if !lc.Failed && lc.Command.Name == engine.CmdInject && lc.Command.Operator == o.ID {
				typed++
			}
		}
		parts, err := engine.TopicRecordsWithTyped(spec, o.ID, log, maxRecords-total)
		if err != nil {
			return fmt.Errorf("read the input of %s: %w", o.ID, err)
		}
		recs := make([][]map[string]any, len(parts))
		for p, rs := range parts {
			recs[p] = make([]map[string]any, len(rs))
			for i, r := range rs {
				m := map[string]any{"key": r.Key, "ts": r.Timestamp}
				if r.Text != "" {
					m["text"] = r.Text
				}
				if r.Value != 0 {
					m["value"] = r.Value
				}
				recs[p][i] = m
			}
			total += len(rs)
		}
		input[o.ID] = recs
	}
	err := fs.WalkDir(Project, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := Project.ReadFile(path)
		if err != nil {
			return err
		}
		if path == "pom.xml" {
			b = []byte(strings.Replace(string(b), "<artifactId>flinkref</artifactId>", "<artifactId>statelab-job</artifactId>", 1))
		}
		return put(path, b)
	})
	if err != nil {
		return fmt.Errorf("write the project's sources: %w", err)
	}
	// job.json says chaining either way: flinkref's JobBuilder turns
	// chaining off for a spec that leaves it out (the conformance
	// harness's jobs), while such a StateLab spec chains, as Flink's
	// default (engine.DefaultChaining).
	js := spec
	if js.Chaining == nil {
		js = spec.Clone()
		on := spec.ChainingEnabled()
		js.Chaining = &on
	}
	jb, err := json.MarshalIndent(js, "", "  ")
	if err != nil {
		return err
	}
	if err := put("job.json", jb); err != nil {
		return err
	}
	ib, err := json.Marshal(map[string]any{"sources": input})
	if err != nil {
		return err
	}
	if err := put("input.json", ib); err != nil {
		return err
	}
	return put("README.md", []byte(exportReadme(spec, total, typed)))
}

func exportReadme(spec *engine.JobSpec, records, typed int) string {
	var ops []string
	for _, o := range spec.Operators {
		ops = append(ops, fmt.Sprintf("`%s` (%s, parallelism %d)", o.ID, o.Kind, o.Parallelism))
	}
	return fmt.Sprintf(`# %s, exported from StateLab

This Maven project runs StateLab's job %q on Apache Flink with the DataStream API: the same operators
(%s), the same edges, parallelism, max parallelism, checkpointing and restart strategy, and the same %d
input records (input.json: each source partition's records in offset order; job.json: the StateLab job spec
the job is built from). The operators are StateLab's conformance harness (flinkref), the code StateLab's
tests run against Flink: the partitioned source is a FLIP-27 Source whose splits are the partitions, the keyed
operators keep ValueState, the exactly-once sink commits in two phases on checkpoints. Each sink appends what
it commits to output/SINK.jsonl. A source's options.rate is not exported: Flink reads as fast as it can,
which changes when results appear, not what they are. %s%s

## Build

    mvn -q package            # Java 17 and Maven 3.8+; Flink %s from Maven Central

## Run on your machine (a local MiniCluster)

    java -cp target/classes:$(cat target/classpath.txt) org.statelab.flinkref.ExportedJob \
      --job job.json --input input.json --output output

## Run on a Flink cluster

    flink run -c org.statelab.flinkref.ExportedJob target/statelab-job-0.1.0.jar \
      --job $PWD/job.json --input $PWD/input.json --output $PWD/output --checkpoints /shared/checkpoints

The cluster provides Flink's own jars; the job jar holds only these classes. input.json and job.json must be
readable, and the output directory writable, by the JobManager and every TaskManager (a shared file system),
and the checkpoint directory must be one they all reach. Flink %s is pinned in pom.xml; -Pflink-1.20 builds
against 1.20.5.

A job this small finishes in seconds; to watch it run, keep its web UI open (the cluster's REST port, 8081 by
default) and attach StateLab to it: statelab attach --flink http://localhost:8081.
`, spec.Name, spec.Name, strings.Join(ops, ", "), records, typedNote(typed), procTimeNote(spec), Version, Version)
}

// typedNote is the README's sentence on the lines typed into the run.
func typedNote(typed int) string {
	switch typed {
	case 0:
		return "input.json holds the records the job's sources start with (generated, and the spec's options.lines); no line was typed into a source."
	case 1:
		return "input.json also holds the line typed into a source in the run, after the records the source started with, in the partition and with the timestamp StateLab gave it."
	}
	return fmt.Sprintf("input.json also holds the %d lines typed into sources in the run, after the records the sources started with, each in the partition and with the timestamp StateLab gave it.", typed)
}

// Version is the Flink version flinkref's pom.xml pins.
var Version = func() string {
	b, _ := Project.ReadFile("pom.xml")
	s := string(b)
	i := strings.Index(s, "<flink.version>")
	j := strings.Index(s, "</flink.version>")
	if i < 0 || j < i {
		return "(see pom.xml)"
	}
	return s[i+len("<flink.version>") : j]
}()

// procTimeNote is the README's paragraph on processing-time alerts, or "".
func procTimeNote(spec *engine.JobSpec) string {
	for _, o := range spec.Operators {
		if d, _ := o.Options["timeDomain"].(string); o.Kind == engine.KindAlerts && d == engine.TimeDomainProcessing {
			return `

An alerts operator here times out on processing time (timeDomain: processing): Flink's processing-time
CountWithTimeoutFunction, whose alerts depend on when records arrive, so they differ from StateLab's run (each
event still ends in exactly one alert). Its timers run on the TaskManagers' wall clock, and Flink drops
processing-time timers still pending when a bounded input ends, so each source waits twice the longest timeout
plus 5 s after reading its input before it ends it.`
		}
	}
	return ""
}
