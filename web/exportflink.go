package web

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"time"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/flinkref"
)

// exportMaxRecords bounds the input records a sandbox's Flink project
// carries (input.json, held in memory while the zip is written); the CLI's
// `statelab export-flink --max-records` takes more.
const exportMaxRecords = 200_000

// handleExportFlink serves GET /api/sessions/{id}/export-flink: the
// session's job, with each operator at the parallelism it runs with now, as
// a Maven project for Apache Flink (flinkref.ExportRun: what `statelab
// export-flink --spec` writes, with the lines typed into the run's sources
// in its input), zipped.
func (srv *Server) handleExportFlink(w http.ResponseWriter, r *http.Request) {
	s := srv.sessionFor(w, r)
	if s == nil {
		return
	}
	if s.run.Spec == nil {
		writeJSON(w, http.StatusConflict, apiError{CodeRefused, "this session has no job to export"})
		return
	}
	spec := s.run.Spec.Clone()
	snap := s.Snapshot()
	// An upgrade command runs a changed job (another operator, uid or max
	// parallelism) that the session's spec does not describe: say so rather
	// than export the job the run started with.
	var started, running []string
	for _, o := range spec.Operators {
		started = append(started, o.ID)
	}
	for _, o := range snap.Job.Operators {
		running = append(running, o.ID)
	}
	slices.Sort(started)
	slices.Sort(running)
	upgraded := !slices.Equal(started, running)
	for _, lc := range snap.Commands {
		upgraded = upgraded || lc.Command.Name == engine.CmdUpgrade
	}
	if upgraded {
		writeJSON(w, http.StatusConflict, apiError{CodeRefused, "this run's job was changed by an upgrade, and the export writes only a job as a sandbox or lesson starts it; reset the run to export its job, or write the changed job as a job spec and run `statelab export-flink --spec FILE`"})
		return
	}
	for i := range spec.Operators {
		for _, o := range snap.Job.Operators {
			if o.ID == spec.Operators[i].ID && o.Parallelism > 0 {
				spec.Operators[i].Parallelism = o.Parallelism
			}
		}
	}
	if err := spec.Validate(); err != nil {
		writeJSON(w, http.StatusConflict, apiError{CodeRefused, fmt.Sprintf("the job as it runs now is not a valid job spec: %v", err)})
		return
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	now := time.Now()
	// The run's command log: lines typed into a source go into input.json too.
	err := flinkref.ExportRun(spec, snap.Commands, exportMaxRecords, func(path string, b []byte) error {
		f, err := zw.CreateHeader(&zip.FileHeader{Name: "statelab-job/" + path, Method: zip.Deflate, Modified: now})
		if err != nil {
			return err
		}
		_, err = f.Write(b)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		writeJSON(w, http.StatusConflict, apiError{CodeRefused, fmt.Sprintf("the job cannot be exported: %v; `statelab export-flink --spec FILE --max-records N` exports larger inputs", err)})
		return
	}
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="statelab-%s-flink.zip"`, fileSafe.ReplaceAllString(spec.Name, "-")))
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// fileSafe matches what a download's file name leaves out.
var fileSafe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)
