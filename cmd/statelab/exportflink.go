package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/flinkref"
	"github.com/statelab/statelab/lessons"
)

func init() {
	register(command{name: "export-flink", summary: "write a lesson's or a spec's job as a Maven project for a real Apache Flink (DataStream API, same operators and input)", run: runExportFlink})
}

// defaultExportRecords bounds the records an export copies into input.json.
const defaultExportRecords = 1_000_000

func runExportFlink(_ context.Context, args []string, io IO) int {
	fs := newFlagSet("export-flink")
	lesson := fs.String("lesson", "", "export this lesson's job (its slug, as `statelab lessons list` shows)")
	variant := fs.String("variant", "", "with --lesson: the job variant (default: the lesson's main job)")
	specFile := fs.String("spec", "", "export the job spec in this file (YAML or JSON, as StateLab reads it)")
	out := fs.String("out", "", "directory to write the Maven project to (created; must be empty or new)")
	maxRecords := fs.Int("max-records", defaultExportRecords, "refuse a job whose sources hold more records than this")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	usage := func(format string, a ...any) int {
		code, _ := usageError(io, fs.Name(), format, a...)
		return code
	}
	if fs.NArg() > 0 {
		return usage("unexpected argument %q (export-flink takes only flags)", fs.Arg(0))
	}
	if (*lesson == "") == (*specFile == "") {
		return usage("give exactly one of --lesson SLUG or --spec FILE")
	}
	if *out == "" {
		return usage("--out DIR is required: where the Maven project is written")
	}
	if *variant != "" && *lesson == "" {
		return usage("--variant goes with --lesson")
	}
	var spec *engine.JobSpec
	if *lesson != "" {
		cat, err := lessons.Default()
		if err != nil {
			fmt.Fprintf(io.Err, "export-flink: load lessons: %v\n", err)
			return exitFail
		}
		l, ok := cat.Lesson(*lesson)
		if !ok {
			return usage("no lesson %q; `statelab lessons list` shows the slugs", *lesson)
		}
		spec, err = l.Job(*variant)
		if err != nil {
			return usage("%v", err)
		}
		if err := spec.Validate(); err != nil {
			fmt.Fprintf(io.Err, "export-flink: lesson %s: %v\n", *lesson, err)
			return exitFail
		}
	} else {
		b, err := os.ReadFile(*specFile)
		if err != nil {
			return usage("read --spec: %v", err)
		}
		spec, err = engine.LoadSpec(b)
		if err != nil {
			return usage("--spec %s: %v", *specFile, err)
		}
	}
	if err := exportFlink(spec, *out, *maxRecords); err != nil {
		fmt.Fprintf(io.Err, "export-flink: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(io.Out, "wrote %s: cd %s && mvn -q package, then see README.md\n", *out, *out)
	return exitOK
}

// exportFlink writes the Maven project for spec into dir.
func exportFlink(spec *engine.JobSpec, dir string, maxRecords int) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty; give a new or empty directory", dir)
	}
	for _, o := range spec.Operators {
		switch o.Kind {
		case engine.KindSource:
			if m, _ := o.Options["offsets"].(string); m == engine.OffsetsUnion {
				return fmt.Errorf("source %s keeps its offsets in union list state; Flink's FLIP-27 sources keep splits split-distributed, so the export has no equivalent", o.ID)
			}
		}
	}
	input := map[string][][]map[string]any{}
	total := 0
	for _, o := range spec.Operators {
		if o.Kind != engine.KindSource {
			continue
		}
		parts, err := engine.TopicRecords(spec, o.ID, maxRecords-total)
		if err != nil {
			return fmt.Errorf("read the input of %s: %w (raise --max-records to export it anyway)", o.ID, err)
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := fs.WalkDir(flinkref.Project, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := flinkref.Project.ReadFile(path)
		if err != nil {
			return err
		}
		if path == "pom.xml" {
			b = []byte(strings.Replace(string(b), "<artifactId>flinkref</artifactId>", "<artifactId>statelab-job</artifactId>", 1))
		}
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("write the project's sources: %w", err)
	}
	jb, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "job.json"), jb, 0o644); err != nil {
		return err
	}
	ib, err := json.Marshal(map[string]any{"sources": input})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "input.json"), ib, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "README.md"), []byte(exportReadme(spec, total)), 0o644)
}

func exportReadme(spec *engine.JobSpec, records int) string {
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
which changes when results appear, not what they are.

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
`, spec.Name, spec.Name, strings.Join(ops, ", "), records, flinkVersion, flinkVersion)
}

// flinkVersion is the Flink version flinkref's pom.xml pins.
var flinkVersion = func() string {
	b, _ := flinkref.Project.ReadFile("pom.xml")
	s := string(b)
	i := strings.Index(s, "<flink.version>")
	j := strings.Index(s, "</flink.version>")
	if i < 0 || j < i {
		return "(see pom.xml)"
	}
	return s[i+len("<flink.version>") : j]
}()
