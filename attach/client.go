package attach

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Timeouts of the default HTTP client. A JobManager answers these GETs from
// memory in milliseconds; waiting longer only keeps a page or a script hanging
// on a wrong address.
const (
	DefaultTimeout     = 10 * time.Second
	defaultDialTimeout = 5 * time.Second
)

// maxBody bounds what StateLab reads from one answer. A job's checkpoint
// history is what Flink keeps (web.checkpoints.history, 10 by default), so
// real answers are kilobytes; the bound protects against a wrong address
// streaming something endless.
const maxBody = 32 << 20

// Client reads Flink's REST API. It only ever sends GET requests.
type Client struct {
	base *url.URL
	http *http.Client
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithHTTPClient replaces the default HTTP client (timeouts, transport).
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *Client) { c.http = hc }
}

// WithTimeout sets the whole-request timeout of the default HTTP client.
func WithTimeout(d time.Duration) ClientOption {
	return func(c *Client) { c.http.Timeout = d }
}

// NewClient returns a client for the JobManager REST address baseURL, e.g.
// "http://localhost:8081". An address without a scheme gets "http://"; a path
// is kept, so a JobManager behind a reverse proxy at /flink/ works.
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	u, err := ParseAddress(baseURL)
	if err != nil {
		return nil, err
	}
	c := &Client{base: u, http: defaultHTTPClient()}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// ParseAddress validates and normalises a JobManager REST address.
func ParseAddress(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, fmt.Errorf("attach: empty Flink address; give the JobManager's REST address, e.g. http://localhost:%d", DefaultRESTPort)
	}
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("attach: Flink address %q is not a URL: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("attach: Flink address %q uses scheme %q; Flink's REST API speaks http or https", raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("attach: Flink address %q names no host; use e.g. http://localhost:%d", raw, DefaultRESTPort)
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

func defaultHTTPClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = GuardDialer(&net.Dialer{Timeout: defaultDialTimeout, KeepAlive: 30 * time.Second}).DialContext
	t.Proxy = nil // the address dialled must be the one checked (guard.go)
	t.ResponseHeaderTimeout = DefaultTimeout
	return &http.Client{Timeout: DefaultTimeout, Transport: t, CheckRedirect: SameOriginRedirects}
}

// BaseURL is the normalised JobManager address.
func (c *Client) BaseURL() string { return c.base.String() }

// Jobs reads GET /jobs: every job the JobManager knows, running or ended.
func (c *Client) Jobs(ctx context.Context) ([]JobIDWithStatus, error) {
	var r jobsResponse
	if err := c.get(ctx, "jobs", &r); err != nil {
		return nil, err
	}
	if r.Jobs == nil {
		return nil, c.notFlinkJSON("jobs", `the JSON has no "jobs" list, which Flink's GET /jobs always has`)
	}
	return *r.Jobs, nil
}

// JobDetails reads GET /jobs/{jobid}.
func (c *Client) JobDetails(ctx context.Context, jobID string) (JobDetails, error) {
	var d JobDetails
	err := c.get(ctx, "jobs/"+url.PathEscape(jobID), &d)
	return d, err
}

// VertexDetails reads GET /jobs/{jobid}/vertices/{vertexid}.
func (c *Client) VertexDetails(ctx context.Context, jobID, vertexID string) (VertexDetails, error) {
	var d VertexDetails
	err := c.get(ctx, "jobs/"+url.PathEscape(jobID)+"/vertices/"+url.PathEscape(vertexID), &d)
	return d, err
}

// JobPlan reads GET /jobs/{jobid}/plan.
func (c *Client) JobPlan(ctx context.Context, jobID string) (Plan, error) {
	path := "jobs/" + url.PathEscape(jobID) + "/plan"
	var r planResponse
	if err := c.get(ctx, path, &r); err != nil {
		return Plan{}, err
	}
	if r.Plan == nil {
		return Plan{}, &MissingFieldError{Endpoints: []string{"GET /" + path}, Object: "the answer", Field: `"plan"`,
			Hint: "without the plan StateLab cannot tell which vertices are keyed"}
	}
	return *r.Plan, nil
}

// Checkpoints reads GET /jobs/{jobid}/checkpoints. A job without
// checkpointing yields ErrCheckpointingDisabled.
func (c *Client) Checkpoints(ctx context.Context, jobID string) (CheckpointingStatistics, error) {
	var s CheckpointingStatistics
	err := c.get(ctx, "jobs/"+url.PathEscape(jobID)+"/checkpoints", &s)
	return s, err
}

// get fetches path (relative to the base URL) and decodes the JSON answer
// into dst, turning every way it can go wrong into one of the package's
// errors.
func (c *Client) get(ctx context.Context, path string, dst any) error {
	u := c.base.JoinPath(path)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return fmt.Errorf("attach: build request for %s: %w", u, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(ctx, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return c.transportError(ctx, err)
	}
	if len(body) > maxBody {
		return c.notFlink(u, resp, body, fmt.Sprintf("the answer is larger than %d MiB", maxBody>>20))
	}
	if resp.StatusCode != http.StatusOK {
		return c.statusError(path, u, resp, body)
	}
	if !looksLikeJSON(body) {
		return c.notFlink(u, resp, body, "that is not JSON")
	}
	if err := json.Unmarshal(body, dst); err != nil {
		return c.notFlink(u, resp, body, fmt.Sprintf("its JSON does not have the shape of Flink's answer (%v)", err))
	}
	return nil
}

// transportError classifies a failed round trip. A cancelled context is the
// caller's doing, not the server's, and is returned as such.
func (c *Client) transportError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	inner := err
	var ue *url.Error
	if errors.As(err, &ue) {
		inner = ue.Err
	}
	var ne net.Error
	timeout := errors.As(err, &ne) && ne.Timeout()
	e := &UnreachableError{Address: c.BaseURL(), Timeout: timeout, Err: inner}
	if c.base.Port() == "" {
		e.ImplicitPort = "80"
		if c.base.Scheme == "https" {
			e.ImplicitPort = "443"
		}
	}
	return e
}

// statusError turns a non-200 answer into an error. Flink answers errors with
// {"errors": [...]}; anything else answering with an error status is not
// Flink. A 404 means different things per endpoint: Flink always serves
// /jobs, so a 404 there means a wrong address; on a job's path it means the
// job is gone, except on /checkpoints where it also means "checkpointing is
// not enabled" (CheckpointingStatisticsHandler).
func (c *Client) statusError(path string, u *url.URL, resp *http.Response, body []byte) error {
	endpoint := "GET /" + path
	var er errorResponse
	isFlink := looksLikeJSON(body) && json.Unmarshal(body, &er) == nil && er.Errors != nil
	if !isFlink {
		return c.notFlink(u, resp, body, "Flink answers errors with a JSON {\"errors\": […]} body")
	}
	msg := firstLine(strings.Join(er.Errors, " "))
	if resp.StatusCode == http.StatusNotFound {
		switch {
		case path == "jobs":
			return c.notFlink(u, resp, body, "Flink's REST API always serves GET /jobs")
		case strings.HasSuffix(path, "/checkpoints") && strings.Contains(msg, "Checkpointing has not been enabled"):
			return fmt.Errorf("%s: %w", endpoint, ErrCheckpointingDisabled)
		case strings.HasPrefix(path, "jobs/"):
			id, _, _ := strings.Cut(strings.TrimPrefix(path, "jobs/"), "/")
			if unescaped, err := url.PathUnescape(id); err == nil {
				id = unescaped
			}
			return &JobNotFoundError{JobID: id, Endpoint: endpoint, Message: msg}
		}
	}
	return &FlinkError{Endpoint: endpoint, Status: resp.Status, Message: msg}
}

func (c *Client) notFlink(u *url.URL, resp *http.Response, body []byte, reason string) error {
	return &NotFlinkError{URL: u.String(), Status: resp.Status, ContentType: resp.Header.Get("Content-Type"),
		BodyBytes: len(body), Kind: bodyKind(body), Reason: reason}
}

func (c *Client) notFlinkJSON(path, reason string) error {
	return &NotFlinkError{URL: c.base.JoinPath(path).String(), Status: "200 OK", ContentType: "application/json", Reason: reason}
}

func looksLikeJSON(body []byte) bool {
	b := bytes.TrimSpace(body)
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// bodyKind describes a body without quoting it: StateLab may have been
// pointed at a service that is not Flink, and what that service answers is
// not for the one who typed the address to read.
func bodyKind(body []byte) string {
	b := bytes.TrimSpace(body)
	switch {
	case len(b) == 0:
		return "an empty body"
	case bytes.HasPrefix(bytes.ToLower(b[:min(len(b), 15)]), []byte("<!doctype html")) || bytes.HasPrefix(bytes.ToLower(b[:min(len(b), 5)]), []byte("<html")):
		return "an HTML page"
	case looksLikeJSON(b):
		return "JSON"
	case utf8.Valid(b):
		return "text"
	}
	return "binary data"
}

// firstLine keeps the first line of a Flink error message: newer versions
// append the server-side stack trace to it.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(s)
}
