package web

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/statelab/statelab/savepoint"
	"github.com/statelab/statelab/web/pages"
)

// MaxSavepointUpload bounds a _metadata upload. The file is read into the
// server's memory, parsed and dropped; it is never written anywhere. Flink
// inlines only small state into _metadata (state.storage.fs.memory-threshold,
// 20 KB per handle by default), so real files are well under this.
const MaxSavepointUpload = 32 << 20

// Error codes of the savepoint API.
const (
	CodeNotMetadata = "not-metadata" // the upload is not a Flink _metadata file
	CodeTooLarge    = "too-large"    // the upload is larger than MaxSavepointUpload
)

func (srv *Server) savepointRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /savepoint", srv.handleSavepointPage)
	mux.HandleFunc("POST /api/savepoint/inspect", srv.handleSavepointInspect)
	mux.HandleFunc("POST /api/savepoint/plan", srv.handleSavepointPlan)
}

func (srv *Server) handleSavepointPage(w http.ResponseWriter, r *http.Request) {
	p := srv.page(w, r, "savepoint", "savepoint.title")
	p.Script = "/static/js/savepoint.js"
	srv.render(w, r, http.StatusOK, pages.Savepoint(p, pages.SavepointForm{MaxBytes: MaxSavepointUpload}))
}

// savepointError is the savepoint API's error: the reader's failure also
// as a reason code with its values (savepoint.Reason), which the page says
// in its own language ("savepoint.reason.<code>" in static/i18n).
type savepointError struct {
	Code    string            `json:"code"`
	Message string            `json:"message"`
	Reason  *savepoint.Reason `json:"reason,omitempty"`
}

// maxUploadParts bounds the files of one directory upload.
const maxUploadParts = 10000

// readMetadataUpload checks the origin, reads the upload within the limit and
// parses it. The upload is either the raw bytes of a _metadata file, or
// multipart/form-data from a directory pick: a part named "metadata" with the
// _metadata, and one part per other file named "path:<its path in the
// directory>", from which the state files the metadata points at are read
// (savepoint.Metadata.LoadFiles over an in-memory file system). Nothing is
// written anywhere. On failure it has written the JSON error.
func (srv *Server) readMetadataUpload(w http.ResponseWriter, r *http.Request) (*savepoint.Metadata, bool) {
	if !srv.checkOrigin(r) {
		writeJSON(w, http.StatusForbidden, apiError{CodeForbidden, "requests from another site's page are refused; open StateLab's own /savepoint page"})
		return nil, false
	}
	body := http.MaxBytesReader(w, r.Body, MaxSavepointUpload)
	var b []byte
	files := savepoint.MemFS{}
	var err error
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		b, err = readDirectoryUpload(r, body, files)
	} else {
		b, err = io.ReadAll(body)
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, apiError{CodeTooLarge, fmt.Sprintf("the upload is larger than %d MiB, the most this page reads; run 'statelab savepoint inspect PATH' on your machine instead", MaxSavepointUpload>>20)})
		return nil, false
	case err != nil:
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, "the upload could not be read: " + err.Error()})
		return nil, false
	case len(b) == 0:
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, "the upload is empty; choose the _metadata file of a savepoint or checkpoint directory"})
		return nil, false
	}
	m, err := savepoint.Read(b)
	if err != nil {
		code := CodeBadArgs
		if errors.Is(err, savepoint.ErrNotMetadata) {
			code = CodeNotMetadata
		}
		r := savepoint.ReasonOf(err)
		writeJSON(w, http.StatusBadRequest, savepointError{code, strings.TrimPrefix(err.Error(), "savepoint: "), &r})
		return nil, false
	}
	if len(files) > 0 {
		m.LoadFiles(files, "", MaxSavepointUpload)
	}
	return m, true
}

// readDirectoryUpload reads a directory pick's parts into files and returns
// the _metadata's bytes.
func readDirectoryUpload(r *http.Request, body io.ReadCloser, files savepoint.MemFS) ([]byte, error) {
	r.Body = body
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, err
	}
	var meta []byte
	for n := 0; ; n++ {
		part, err := mr.NextPart()
		if err == io.EOF {
			return meta, nil
		}
		if err != nil {
			return nil, err
		}
		if n >= maxUploadParts {
			return nil, fmt.Errorf("more than %d files", maxUploadParts)
		}
		data, err := io.ReadAll(part)
		if err != nil {
			return nil, err
		}
		switch name := part.FormName(); {
		case name == "metadata":
			meta = data
		case strings.HasPrefix(name, "path:"):
			files[strings.TrimPrefix(name, "path:")] = data
		}
	}
}

// handleSavepointInspect answers an uploaded _metadata with the report the
// CLI's 'savepoint inspect --json' prints.
func (srv *Server) handleSavepointInspect(w http.ResponseWriter, r *http.Request) {
	m, ok := srv.readMetadataUpload(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, savepoint.NewReport(m))
}

// handleSavepointPlan answers ?operator=ID&parallelism=N for an uploaded
// _metadata with the rescale plan (the CLI's 'savepoint plan --json').
func (srv *Server) handleSavepointPlan(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	n, err := strconv.Atoi(q.Get("parallelism"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, fmt.Sprintf("parallelism %q is not a whole number", q.Get("parallelism"))})
		return
	}
	m, ok := srv.readMetadataUpload(w, r)
	if !ok {
		return
	}
	op, err := m.FindOperator(q.Get("operator"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, strings.TrimPrefix(err.Error(), "savepoint: ")})
		return
	}
	plan, err := savepoint.NewPlan(op, n)
	if err != nil {
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "savepoint: "), "rescale: ")
		writeJSON(w, http.StatusBadRequest, apiError{CodeBadArgs, msg})
		return
	}
	writeJSON(w, http.StatusOK, plan)
}
