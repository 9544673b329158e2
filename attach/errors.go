package attach

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Every error the client returns wraps one of them, so a
// caller (the CLI, the web page) can choose what to say and whether to go on
// with errors.Is; the concrete types below carry the details for the message.
var (
	// ErrUnreachable: no HTTP answer at all (refused, DNS, timeout, TLS).
	ErrUnreachable = errors.New("attach: Flink REST API unreachable")
	// ErrNotFlink: something answered, but not as Flink's REST API does.
	ErrNotFlink = errors.New("attach: not a Flink REST endpoint")
	// ErrJobNotFound: the job is not (or no longer) known to the JobManager.
	ErrJobNotFound = errors.New("attach: job not found")
	// ErrCheckpointingDisabled: the job runs without checkpointing, so Flink
	// has no checkpoint statistics for it (a 404, not a failure).
	ErrCheckpointingDisabled = errors.New("attach: checkpointing not enabled")
	// ErrMissingField: Flink answered, but without a field StateLab needs;
	// older Flink versions lack some fields.
	ErrMissingField = errors.New("attach: field missing from Flink's answer")
	// ErrFlink: Flink answered with an error status of its own (e.g. 500).
	ErrFlink = errors.New("attach: Flink reported an error")
)

// DefaultRESTPort is the JobManager's REST port when rest.port is not set.
const DefaultRESTPort = 8081

// UnreachableError says which address could not be reached and why.
type UnreachableError struct {
	Address string // the base URL as the user gave it, normalised
	// ImplicitPort is the port the request went to when the address named
	// none (80 or 443): a common slip, since Flink listens on 8081.
	ImplicitPort string
	Timeout      bool
	Err          error
}

func (e *UnreachableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cannot reach Flink's REST API at %s", e.Address)
	if e.Timeout {
		b.WriteString(" (no answer before the timeout)")
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	fmt.Fprintf(&b, "; check that the JobManager is running and that the host and port are right (the REST port is Flink's rest.port, %d by default)", DefaultRESTPort)
	if e.ImplicitPort != "" {
		fmt.Fprintf(&b, "; the address names no port, so port %s was used", e.ImplicitPort)
	}
	return b.String()
}

func (e *UnreachableError) Unwrap() []error { return []error{ErrUnreachable, e.Err} }

// NotFlinkError says what answered instead of Flink's REST API.
type NotFlinkError struct {
	URL         string // full URL requested
	Status      string // e.g. "404 Not Found"
	ContentType string
	// BodyBytes and Kind describe the body ("an HTML page", "text", …);
	// it is never quoted (guard.go: an address may be a service that is not
	// Flink's, whose answer is not for the user to read).
	BodyBytes int
	Kind      string
	Reason    string // what was wrong with it
}

func (e *NotFlinkError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GET %s answered %s", e.URL, e.Status)
	if e.ContentType != "" {
		fmt.Fprintf(&b, " with %s", e.ContentType)
	}
	if e.Kind != "" {
		fmt.Fprintf(&b, " (%s, %d bytes)", e.Kind, e.BodyBytes)
	}
	fmt.Fprintf(&b, ": %s; this does not look like Flink's REST API: point StateLab at the JobManager's REST address, the one the Flink web UI is served from (port %d by default)", e.Reason, DefaultRESTPort)
	return b.String()
}

func (e *NotFlinkError) Unwrap() error { return ErrNotFlink }

// JobNotFoundError is a job that GET /jobs listed (or the user named) but
// that Flink does not know when asked about it.
type JobNotFoundError struct {
	JobID    string
	Endpoint string   // e.g. "GET /jobs/<id>/plan"
	Message  string   // Flink's own message, first line
	Listed   []string // when the job was never listed: the jobs that were
}

func (e *JobNotFoundError) Error() string {
	if e.Listed != nil {
		listed := "none"
		if len(e.Listed) > 0 {
			listed = strings.Join(e.Listed, ", ")
		}
		return fmt.Sprintf("job %s is not listed by %s (jobs listed: %s); check the job ID in the Flink web UI or drop --job to see every job", e.JobID, e.Endpoint, listed)
	}
	msg := fmt.Sprintf("job %s vanished: %s answered 404", e.JobID, e.Endpoint)
	if e.Message != "" {
		msg += fmt.Sprintf(" (%q)", e.Message)
	}
	return msg + "; it ended and left the JobManager's job store, or the cluster restarted, between StateLab listing it and reading it"
}

func (e *JobNotFoundError) Unwrap() error { return ErrJobNotFound }

// MissingFieldError names a field Flink's answer lacks, where it was looked
// for, and what to do about it.
type MissingFieldError struct {
	Endpoints []string // where the field was looked for, e.g. "GET /jobs/<id>"
	Object    string   // e.g. `vertex "count" (id …)`
	Field     string   // JSON name, e.g. "maxParallelism"
	Hint      string
}

func (e *MissingFieldError) Error() string {
	where := strings.Join(e.Endpoints, " and ")
	msg := fmt.Sprintf("%s: %s has no %s", where, e.Object, e.Field)
	if e.Hint != "" {
		msg += "; " + e.Hint
	}
	return msg
}

func (e *MissingFieldError) Unwrap() error { return ErrMissingField }

// FlinkError is a non-404 error status from a Flink REST endpoint, with the
// messages Flink put in its {"errors": […]} body.
type FlinkError struct {
	Endpoint string
	Status   string
	Message  string
}

func (e *FlinkError) Error() string {
	msg := fmt.Sprintf("%s answered %s", e.Endpoint, e.Status)
	if e.Message != "" {
		msg += fmt.Sprintf(": %q", e.Message)
	}
	return msg + "; see the JobManager's log for the cause"
}

func (e *FlinkError) Unwrap() error { return ErrFlink }
