package attach_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/attach"
)

func TestCheckAddress(t *testing.T) {
	for _, a := range []string{"169.254.169.254", "169.254.1.1", "fe80::1", "::ffff:169.254.169.254", "fd00:ec2::254", "100.100.100.200", "168.63.129.16", "0.0.0.0", "::", "224.0.0.1", "255.255.255.255"} {
		err := attach.CheckAddress(netip.MustParseAddr(a))
		assert.ErrorIs(t, err, attach.ErrForbiddenAddress, a)
	}
	for _, a := range []string{"127.0.0.1", "::1", "192.168.1.20", "10.0.0.5", "172.16.3.4", "203.0.113.7"} {
		assert.NoError(t, attach.CheckAddress(netip.MustParseAddr(a)), a)
	}
}

// TestClientRefusesMetadataAddresses: the client never connects to a cloud
// metadata address, and says which address to give instead.
func TestClientRefusesMetadataAddresses(t *testing.T) {
	for _, addr := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fe80::1]:8081", "http://100.100.100.200"} {
		c, err := attach.NewClient(addr)
		require.NoError(t, err)
		_, err = c.Jobs(context.Background())
		require.ErrorIs(t, err, attach.ErrForbiddenAddress, addr)
		assert.ErrorIs(t, err, attach.ErrUnreachable, "still an unreachable JobManager to the callers")
		assert.Contains(t, err.Error(), "never reads")
		assert.Contains(t, err.Error(), "JobManager's REST address")
	}
}

// TestRedirectsStayOnTheSameOrigin: a JobManager address that redirects to
// another server (the review's redirect to an internal URL) is refused with
// a message that names both; a redirect within the same server is followed.
func TestRedirectsStayOnTheSameOrigin(t *testing.T) {
	internal := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"jobs":[]}`))
	}))
	defer internal.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/proxy/jobs" {
			_, _ = w.Write([]byte(`{"jobs":[]}`))
			return
		}
		if strings.HasPrefix(r.URL.Path, "/same/") {
			http.Redirect(w, r, "/proxy/"+strings.TrimPrefix(r.URL.Path, "/same/"), http.StatusFound)
			return
		}
		// Same IP, another port: another server.
		http.Redirect(w, r, internal.URL+"/jobs", http.StatusFound)
	}))
	defer redirector.Close()

	c, err := attach.NewClient(redirector.URL)
	require.NoError(t, err)
	_, err = c.Jobs(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused a redirect")
	assert.Contains(t, err.Error(), strings.TrimPrefix(internal.URL, "http://"))

	c, err = attach.NewClient(redirector.URL + "/same/")
	require.NoError(t, err)
	jobs, err := c.Jobs(context.Background())
	require.NoError(t, err, "a redirect within the same server is followed")
	assert.Empty(t, jobs)
}
