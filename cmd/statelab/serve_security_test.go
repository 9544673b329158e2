package main

import (
	"context"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestListenHosts(t *testing.T) {
	ifaces := func() ([]net.Addr, error) {
		return []net.Addr{&net.IPNet{IP: net.ParseIP("127.0.0.1")}, &net.IPNet{IP: net.ParseIP("192.168.1.20")}, &net.IPNet{IP: net.ParseIP("fe80::1")}}, nil
	}
	assert.Equal(t, []string{"127.0.0.1"}, listenHosts("127.0.0.1:8080", ifaces))
	assert.Equal(t, []string{"teacher-laptop.local"}, listenHosts("teacher-laptop.local:8080", ifaces))
	assert.Equal(t, []string{"127.0.0.1", "192.168.1.20", "fe80::1"}, listenHosts("0.0.0.0:8080", ifaces))
	assert.Equal(t, []string{"127.0.0.1", "192.168.1.20", "fe80::1"}, listenHosts(":8080", ifaces))
}

// TestServeAnswersOnlyItsOwnHosts: a running statelab serve refuses a
// request whose Host is a name it was not started with (DNS rebinding),
// answers its own address, and --allow-origin adds a name.
func TestServeAnswersOnlyItsOwnHosts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--quiet", "--allow-origin", "http://docs.example:3000"},
			IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	}()
	re := regexp.MustCompile(`running at (http://127\.0\.0\.1:(\d+)/)`)
	var url, port string
	for deadline := time.Now().Add(time.Minute); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url, port = m[1], m[2]
		}
	}
	require.NotEmpty(t, url, "stdout %q stderr %q", out.String(), errb.String())
	get := func(host string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("127.0.0.1:"+port))
	assert.Equal(t, http.StatusOK, get("localhost:"+port))
	assert.Equal(t, http.StatusOK, get("docs.example:"+port))
	assert.Equal(t, http.StatusForbidden, get("rebind.attacker.example:"+port))
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, exitOK, code)
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}

// TestServeBoundsFlags: the bounds' flags are listed in the help and a
// bound below 1 is refused by name.
func TestServeBoundsFlags(t *testing.T) {
	var out, errb syncBuffer
	code := Main(context.Background(), []string{"serve", "--max-parallelism", "0", "--data", t.TempDir()}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errb.String(), "--max-parallelism 0 is below 1")
	out, errb = syncBuffer{}, syncBuffer{}
	Main(context.Background(), []string{"serve", "-h"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	help := out.String() + errb.String()
	for _, f := range []string{"--max-parallelism", "--max-taskmanagers", "--max-keys", "--max-replay-steps", "--max-commands", "--max-replay-time"} {
		assert.Contains(t, help, strings.TrimPrefix(f, "-"), f)
	}
}

func TestAttachIsOffBeyondLoopback(t *testing.T) {
	assert.False(t, beyondLoopback("127.0.0.1:8080"))
	assert.False(t, beyondLoopback("localhost:8080"))
	assert.False(t, beyondLoopback("[::1]:8080"))
	assert.True(t, beyondLoopback("0.0.0.0:8080"))
	assert.True(t, beyondLoopback(":8080"))
	assert.True(t, beyondLoopback("192.168.1.20:8080"))
	assert.True(t, beyondLoopback("teacher-laptop.local:8080"))
}
