package web

import (
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// postClassroomForm posts the /classroom start form with the given headers
// and returns the status, without following the redirect.
func postClassroomForm(t *testing.T, ts *testServer, header http.Header) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.hs.URL+"/classroom", strings.NewReader(url.Values{"template": {"wordcount"}, "seed": {"1"}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// TestClassroomFormOriginPolicy: the app's own form passes however the
// browser labels it (Chromium sends Origin: null under the pages'
// Referrer-Policy: no-referrer, with Sec-Fetch-Site: same-origin); every
// cross-site form post is refused, including one whose Origin differs only
// in scheme.
func TestClassroomFormOriginPolicy(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.MaxClassrooms = 64 })
	own := ts.hs.URL
	tests := []struct {
		name   string
		header http.Header
		want   int
	}{
		{"the app's own form in Chromium (Origin null, same-origin)", http.Header{"Origin": {"null"}, "Sec-Fetch-Site": {"same-origin"}}, http.StatusSeeOther},
		{"the app's own form with its Origin", http.Header{"Origin": {own}, "Sec-Fetch-Site": {"same-origin"}}, http.StatusSeeOther},
		{"an older browser sending its Origin only", http.Header{"Origin": {own}}, http.StatusSeeOther},
		{"no browser at all (curl)", http.Header{}, http.StatusSeeOther},
		{"a foreign Origin", http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"a foreign Origin, cross-site", http.Header{"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"Origin null from another site (sandboxed frame)", http.Header{"Origin": {"null"}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"Origin null without Sec-Fetch-Site", http.Header{"Origin": {"null"}}, http.StatusForbidden},
		{"cross-site whatever the Origin says", http.Header{"Origin": {own}, "Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"cross-site without an Origin", http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"another port of the same site", http.Header{"Origin": {"http://127.0.0.1:1"}, "Sec-Fetch-Site": {"same-site"}}, http.StatusForbidden},
		{"the same host with another scheme", http.Header{"Origin": {"https://" + strings.TrimPrefix(own, "http://")}}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, postClassroomForm(t, ts, tt.header))
		})
	}
}

// TestWebSocketOriginNeedsScheme: a page served over https on the same
// host:port is another origin; its WebSocket is refused.
func TestWebSocketOriginNeedsScheme(t *testing.T) {
	ts := newTestServer(t, nil)
	h := http.Header{"Origin": {"https://" + strings.TrimPrefix(ts.hs.URL, "http://")}}
	_, resp, err := websocketDial(ts, "template=wordcount", h)
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
}

// websocketDial dials query on ts and returns the handshake's response.
func websocketDial(ts *testServer, query string, h http.Header) (*websocket.Conn, *http.Response, error) {
	c, resp, err := websocket.DefaultDialer.Dial(ts.wsURL(query), h)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if c != nil {
		ts.t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

// TestHostAllowlistStopsDNSRebinding: a request for a Host the server was
// not started with is refused on pages, the API and the WebSocket, even with
// a matching Origin (after a rebinding both belong to the attacker); the
// loopback names, configured names and PublicURL's host are answered.
func TestHostAllowlistStopsDNSRebinding(t *testing.T) {
	ts := newTestServer(t, func(c *Config) {
		c.AllowHosts = []string{"teacher-laptop.local"}
		c.AllowOrigins = []string{"http://docs.example:3000"}
	})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(ts.hs.URL, "http://"))
	do := func(method, path, host string, h http.Header) int {
		req, err := http.NewRequest(method, ts.hs.URL+path, strings.NewReader(""))
		require.NoError(t, err)
		req.Host = host
		for k, v := range h {
			req.Header[k] = v
		}
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusForbidden && strings.Contains(host, "rebind") {
			assert.Contains(t, string(body), "--allow-origin", "the refusal says how to allow a name")
		}
		return resp.StatusCode
	}
	rebind := "rebind.attacker.example:" + port
	own := http.Header{"Origin": {"http://" + rebind}, "Sec-Fetch-Site": {"same-origin"}}
	assert.Equal(t, http.StatusForbidden, do("GET", "/", rebind, nil), "a page")
	assert.Equal(t, http.StatusForbidden, do("POST", "/api/classrooms", rebind, own), "the API")
	assert.Equal(t, http.StatusForbidden, do("GET", "/api/keygroup?key=a&maxParallelism=128", rebind, nil), "a read-only API")
	assert.Equal(t, 0, ts.srv.ext.rooms.live(ts.srv), "no classroom was created")

	wsh := http.Header{"Origin": {"http://" + rebind}}
	d := websocket.Dialer{NetDial: func(network, _ string) (net.Conn, error) {
		return net.Dial(network, strings.TrimPrefix(ts.hs.URL, "http://"))
	}}
	_, resp, err := d.Dial("ws://"+rebind+"/ws?template=wordcount", wsh)
	require.Error(t, err, "the WebSocket")
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)

	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "LOCALHOST:" + port, "teacher-laptop.local:" + port, "docs.example:" + port} {
		assert.Equal(t, http.StatusOK, do("GET", "/", host, nil), host)
	}
	assert.Equal(t, http.StatusForbidden, do("GET", "/", "192.168.1.20:"+port, nil), "a LAN address before it is the public URL")
	ts.srv.SetPublicURL("http://192.168.1.20:" + port)
	assert.Equal(t, http.StatusOK, do("GET", "/", "192.168.1.20:"+port, nil), "the LAN address the server prints")
}

// TestJoinsAreThrottled: finding 6. Wrong classroom codes and presenter
// tokens from one address are answered with 429 and Retry-After once it has
// failed joinBurst times, on the pages, the API and the WebSocket; the
// honest user is told what to do.
func TestJoinsAreThrottled(t *testing.T) {
	ts := newTestServer(t, nil)
	status, info := ts.createClassroom("", nil)
	require.Equal(t, http.StatusCreated, status)
	code := info["code"].(string)
	get := func(path string) *http.Response {
		resp, err := http.Get(ts.hs.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for i := range joinBurst {
		assert.Equal(t, http.StatusNotFound, get(fmt.Sprintf("/api/classrooms/ZZZZ%02d", i)).StatusCode)
	}
	for _, path := range []string{"/join/ZZZZZZ", "/api/classrooms/ZZZZZZ", "/classroom/" + code + "?token=guess", "/join/" + code} {
		resp := get(path)
		assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, path)
		n, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		assert.NoError(t, err, "Retry-After is a number of seconds")
		assert.Positive(t, n)
	}
	_, resp, err := websocketDial(ts, "classroom="+code+"&token=guess", nil)
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "the WebSocket too")
	req, _ := http.NewRequest(http.MethodGet, ts.hs.URL+"/api/classrooms/ZZZZZZ", nil)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "check the code on the projector")

	// Wrong presenter tokens over the WebSocket count too (a fresh server).
	ts2 := newTestServer(t, nil)
	_, info = ts2.createClassroom("", nil)
	code = info["code"].(string)
	for range joinBurst {
		e := openError(t, ts2, "classroom="+code+"&token=guess")
		assert.Equal(t, CodeForbidden, e["code"])
	}
	_, resp, err = websocketDial(ts2, "classroom="+code+"&token=guess", nil)
	require.Error(t, err)
	assert.Equal(t, http.StatusTooManyRequests, resp.StatusCode)
}

// TestNotFoundLinksStayOnSite: finding 6. The 404 page's language links
// repeat the path; /%2F%2Fevil.example/x made them //evil.example/x, a link
// to another site.
func TestNotFoundLinksStayOnSite(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, path := range []string{"/%2F%2Fevil.example/x", "/%5C%5Cevil.example/x", "/%2F/evil.example"} {
		resp, err := http.Get(ts.hs.URL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
		for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllStringSubmatch(string(body), -1) {
			href := html.UnescapeString(m[1])
			u, err := url.Parse(href)
			require.NoError(t, err, href)
			assert.Empty(t, u.Host, "%s: link %q leaves the site", path, href)
			assert.False(t, strings.HasPrefix(href, "//") || strings.HasPrefix(href, "/\\"), "%s: link %q", path, href)
		}
	}
}
