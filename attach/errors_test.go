package attach_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/attach"
	"github.com/statelab/statelab/attach/attachtest"
	"github.com/statelab/statelab/rescale"
)

func TestParseAddress(t *testing.T) {
	tests := []struct {
		in, want string
		errPart  string
	}{
		{in: "http://localhost:8081", want: "http://localhost:8081"},
		{in: "localhost:8081", want: "http://localhost:8081"},
		{in: " https://flink.example.com/jobmanager/ ", want: "https://flink.example.com/jobmanager/"},
		{in: "http://host:8081/?x=1#y", want: "http://host:8081/"},
		{in: "", errPart: "empty Flink address"},
		{in: "ftp://host:8081", errPart: `scheme "ftp"`},
		{in: "http://", errPart: "names no host"},
	}
	for _, tt := range tests {
		u, err := attach.ParseAddress(tt.in)
		if tt.errPart != "" {
			require.Error(t, err, tt.in)
			assert.Contains(t, err.Error(), tt.errPart)
			continue
		}
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, u.String())
	}
}

func TestBasePathIsKept(t *testing.T) {
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	defer srv.Close()
	c, err := attach.NewClient(srv.URL + "/proxy/flink/")
	require.NoError(t, err)
	_, err = c.Jobs(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"/proxy/flink/jobs"}, paths)
}

func TestUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close() // nothing listens there any more
	c, err := attach.NewClient(addr)
	require.NoError(t, err)
	_, err = c.Snapshot(context.Background(), attach.Options{})
	require.ErrorIs(t, err, attach.ErrUnreachable)
	assert.ErrorIs(t, err, syscall.ECONNREFUSED, "the cause stays inspectable")
	msg := err.Error()
	for _, part := range []string{"cannot reach Flink's REST API at " + addr, "JobManager is running", "rest.port", "8081"} {
		assert.Contains(t, msg, part)
	}
	assert.NotContains(t, msg, "names no port")
}

// failingTransport fails every round trip as a refused connection would.
type failingTransport struct{}

func (failingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, &netError{}
}

type netError struct{}

func (*netError) Error() string   { return "dial tcp: connection refused" }
func (*netError) Timeout() bool   { return false }
func (*netError) Temporary() bool { return false }

func TestUnreachableWithoutPortSaysWhichPortWasUsed(t *testing.T) {
	tests := []struct{ addr, port string }{
		{addr: "http://jobmanager", port: "80"},
		{addr: "https://jobmanager", port: "443"},
	}
	for _, tt := range tests {
		c, err := attach.NewClient(tt.addr, attach.WithHTTPClient(&http.Client{Transport: failingTransport{}}))
		require.NoError(t, err)
		_, err = c.Jobs(context.Background())
		var ue *attach.UnreachableError
		require.ErrorAs(t, err, &ue)
		assert.Equal(t, tt.port, ue.ImplicitPort)
		assert.Contains(t, err.Error(), "names no port, so port "+tt.port+" was used")
	}
}

func TestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	c, err := attach.NewClient(srv.URL, attach.WithTimeout(50*time.Millisecond))
	require.NoError(t, err)
	_, err = c.Jobs(context.Background())
	var ue *attach.UnreachableError
	require.ErrorAs(t, err, &ue)
	assert.True(t, ue.Timeout)
	assert.Contains(t, err.Error(), "no answer before the timeout")
}

func TestNotAFlinkEndpoint(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		parts       []string
	}{
		{name: "an HTML page", status: 200, contentType: "text/html; charset=utf-8",
			body:  "<!doctype html>\n<html><head><title>Welcome to nginx!</title></head><body>It works</body></html>",
			parts: []string{"200 OK", "text/html", "an HTML page, 95 bytes", "not JSON"}},
		{name: "an HTML 404", status: 404, contentType: "text/html",
			body:  "<html><body><h1>404 Not Found</h1></body></html>",
			parts: []string{"404 Not Found", "text/html", `JSON {"errors": […]} body`}},
		{name: "a Flink-style 404 on /jobs (wrong path prefix)", status: 404, contentType: "application/json",
			body:  `{"errors":["Not found: /v2/jobs"]}`,
			parts: []string{"404 Not Found", "always serves GET /jobs"}},
		{name: "JSON without jobs", status: 200, contentType: "application/json",
			body:  `{"status":"UP"}`,
			parts: []string{`no "jobs" list`}},
		{name: "JSON of another shape", status: 200, contentType: "application/json",
			body:  `{"jobs":"none"}`,
			parts: []string{"does not have the shape of Flink's answer"}},
		{name: "plain text", status: 200, contentType: "text/plain",
			body:  "hello",
			parts: []string{"text/plain", "text, 5 bytes", "not JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			c, err := attach.NewClient(srv.URL)
			require.NoError(t, err)
			_, err = c.Snapshot(context.Background(), attach.Options{})
			require.ErrorIs(t, err, attach.ErrNotFlink)
			msg := err.Error()
			assert.Contains(t, msg, "GET "+srv.URL+"/jobs answered")
			assert.Contains(t, msg, "point StateLab at the JobManager's REST address")
			for _, p := range tt.parts {
				assert.Contains(t, msg, p)
			}
		})
	}
}

// TestNotFlinkNeverQuotesTheBody: an address that is some other service
// gets an error that says what answered (an HTML page, text, its size) and
// what to check, never the body itself (the security review read
// "TOP-SECRET-internal-token=abc123" out of an internal service this way).
func TestNotFlinkNeverQuotesTheBody(t *testing.T) {
	for _, tt := range []struct{ ctype, body, kind string }{
		{"text/plain", "TOP-SECRET-internal-token=abc123", "text"},
		{"text/html", "<html>\n" + strings.Repeat("é", 200) + "TOP-SECRET</html>", "an HTML page"},
		{"application/octet-stream", "\xff\xfeTOP-SECRET", "binary data"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tt.ctype)
			_, _ = w.Write([]byte(tt.body))
		}))
		c, err := attach.NewClient(srv.URL)
		require.NoError(t, err)
		_, err = c.Jobs(context.Background())
		srv.Close()
		var nf *attach.NotFlinkError
		require.ErrorAs(t, err, &nf)
		assert.NotContains(t, err.Error(), "TOP-SECRET")
		assert.Contains(t, err.Error(), tt.kind)
		assert.Contains(t, err.Error(), fmt.Sprintf("%d bytes", len(tt.body)))
		assert.Contains(t, err.Error(), "JobManager's REST address", "it still says what to check")
	}
}

func TestFlinkErrorOnOneJobKeepsTheOthers(t *testing.T) {
	srv := attachtest.NewServer(t, attachtest.FixtureDir("flink-1.17"))
	srv.Override("/jobs/"+v117Job, attachtest.Response{Status: 500, ContentType: "application/json",
		Body: `{"errors":["Internal server error.","<Exception on server side:\njava.lang.NullPointerException\n\tat ...\n\nEnd of exception on server side>"]}`})
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	s, err := c.Snapshot(context.Background(), attach.Options{})
	require.NoError(t, err)
	require.Len(t, s.Jobs, 1)
	assert.Equal(t, v117NoCkpt, s.Jobs[0].ID)
	require.Len(t, s.Warnings, 1)
	var fe *attach.FlinkError
	require.ErrorAs(t, s.Warnings[0].Err, &fe)
	assert.Equal(t, "GET /jobs/"+v117Job, fe.Endpoint)
	assert.Equal(t, "Internal server error. <Exception on server side:", fe.Message)
	assert.Contains(t, s.Warnings[0].Message, "this job is skipped")
	assert.Contains(t, s.Warnings[0].Message, "JobManager's log")
}

func TestPlanWithoutPlanField(t *testing.T) {
	srv := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))
	srv.Override("/jobs/"+v20Job+"/plan", attachtest.Response{Status: 200, ContentType: "application/json", Body: `{}`})
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	s, err := c.Snapshot(context.Background(), attach.Options{})
	require.NoError(t, err)
	assert.Empty(t, s.Jobs)
	require.Len(t, s.Warnings, 1)
	var mf *attach.MissingFieldError
	require.ErrorAs(t, s.Warnings[0].Err, &mf)
	assert.Equal(t, `"plan"`, mf.Field)
	assert.Equal(t, []string{"GET /jobs/" + v20Job + "/plan"}, mf.Endpoints)
}

func TestVertexMissingFromPlanAndParallelismAboveMax(t *testing.T) {
	srv := attachtest.NewServer(t, attachtest.FixtureDir("flink-2.0"))
	// The plan lacks the audit sink; the window vertex reports p 300 > max 256.
	srv.Override("/jobs/"+v20Job+"/plan", attachtest.Response{Status: 200, ContentType: "application/json",
		Body: `{"plan":{"jid":"` + v20Job + `","name":"Fraud Scoring","nodes":[
			{"id":"` + v20Source + `","parallelism":2,"inputs":[]},
			{"id":"` + v20Window + `","parallelism":300,"inputs":[{"num":0,"id":"` + v20Source + `","ship_strategy":"HASH"}]},
			{"id":"` + v20Proc + `","parallelism":3,"inputs":[{"num":0,"id":"` + v20Window + `","ship_strategy":"HASH"}]}]}}`})
	srv.Override("/jobs/"+v20Job, attachtest.Response{Status: 200, ContentType: "application/json",
		Body: `{"jid":"` + v20Job + `","name":"Fraud Scoring","state":"RUNNING","vertices":[
			{"id":"` + v20Source + `","name":"Source: Payments","parallelism":2,"maxParallelism":128},
			{"id":"` + v20Window + `","name":"Window","parallelism":300,"maxParallelism":256},
			{"id":"` + v20Proc + `","name":"KeyedProcess","maxParallelism":128},
			{"id":"` + v20Audit + `","name":"Sink: Audit","parallelism":1,"maxParallelism":1}]}`})
	c, err := attach.NewClient(srv.URL)
	require.NoError(t, err)
	s, err := c.Snapshot(context.Background(), attach.Options{})
	require.NoError(t, err)
	require.Len(t, s.Jobs, 1)
	vs := s.Jobs[0].Vertices
	assert.True(t, vs[1].Keyed)
	assert.Nil(t, vs[1].KeyGroups, "Flink would refuse p 300 > max 256")
	assert.Equal(t, 3, vs[2].Parallelism, "parallelism taken from the plan when the details lack it")
	assert.Len(t, vs[2].KeyGroups, 3)
	assert.False(t, vs[3].Keyed)
	require.Len(t, s.Warnings, 2)
	assert.Contains(t, s.Warnings[0].Message, `GET /jobs/`+v20Job+`/plan has no node for vertex "Sink: Audit"`)
	assert.ErrorIs(t, s.Warnings[1].Err, rescale.ErrAboveMax)
	assert.Contains(t, s.Warnings[1].Message, `vertex "Window"`)
}

func TestErrorSentinelsAreDistinct(t *testing.T) {
	all := []error{attach.ErrUnreachable, attach.ErrNotFlink, attach.ErrJobNotFound,
		attach.ErrCheckpointingDisabled, attach.ErrMissingField, attach.ErrFlink}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b))
		}
	}
}
