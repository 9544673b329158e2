package main

import (
	"context"
	"fmt"
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

// exportFlink writes the Maven project for spec into dir (flinkref.Export).
func exportFlink(spec *engine.JobSpec, dir string, maxRecords int) error {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty; give a new or empty directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	err := flinkref.Export(spec, maxRecords, func(path string, b []byte) error {
		dst := filepath.Join(dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil && strings.HasPrefix(err.Error(), "read the input of ") {
		return fmt.Errorf("%w (raise --max-records to export it anyway)", err)
	}
	return err
}
