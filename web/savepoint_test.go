package web

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedKafkaMetadata is the _metadata of a savepoint Flink wrote for a
// KafkaSource job (format version 4, parallelism 3, max parallelism 128),
// kept outside the project (/work/shared/flink-savepoints).
func sharedKafkaMetadata(t *testing.T) (string, []byte) {
	t.Helper()
	dir := os.Getenv("STATELAB_SHARED")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared")
	}
	p, err := filepath.Abs(filepath.Join(dir, "flink-savepoints", "kafka-source-savepoint-v4._metadata"))
	require.NoError(t, err)
	b, err := os.ReadFile(p)
	if err != nil {
		if os.Getenv("E2E") == "1" {
			t.Fatalf("E2E=1 but the shared Flink savepoint is missing: %v (set STATELAB_SHARED)", err)
		}
		t.Skipf("the shared Flink savepoint is not here (%v); set STATELAB_SHARED", err)
	}
	return p, b
}

func postMetadata(t *testing.T, url string, body []byte, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/octet-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m), string(data))
	return resp.StatusCode, m
}

func TestSavepointPage(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, c := range []struct{ lang, title, nav string }{{"en", "Look inside a Flink savepoint", "Savepoint"}, {"zh", "查看 Flink 保存点的内容", "保存点"}} {
		status, html, hdr := getPage(t, ts.hs.URL+"/savepoint?lang="+c.lang)
		require.Equal(t, http.StatusOK, status)
		assert.Contains(t, hdr.Get("Content-Security-Policy"), "script-src 'self'")
		assert.NotContains(t, html, "<script>")
		assert.NotContains(t, html, " style=")
		assert.Contains(t, html, c.title)
		assert.Contains(t, html, `href="/savepoint" aria-current="page">`+c.nav+`</a>`)
		assert.Contains(t, html, `type="file" id="sp-file"`)
		assert.Contains(t, html, `src="/static/js/savepoint.js"`)
	}
}

func TestSavepointAPI(t *testing.T) {
	ts := newTestServer(t, nil)
	_, b := sharedKafkaMetadata(t)

	status, rep := postMetadata(t, ts.hs.URL+"/api/savepoint/inspect", b, nil)
	require.Equal(t, http.StatusOK, status, rep)
	assert.EqualValues(t, 4, rep["version"])
	assert.EqualValues(t, 1, rep["checkpointId"])
	ops := rep["operators"].([]any)
	require.Len(t, ops, 2)
	assert.Equal(t, "7d246211b2be972287522fe7978b38c1", ops[0].(map[string]any)["id"])

	// The plan refuses a parallelism above the max parallelism, as Flink does.
	status, body := postMetadata(t, ts.hs.URL+"/api/savepoint/plan?operator=cb16aa5adb311e8ac72482def19accbe&parallelism=129", b, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body["message"], "maximum parallelism (128) is lower than the configured parallelism (129)")
	status, body = postMetadata(t, ts.hs.URL+"/api/savepoint/plan?operator=cb16aa5adb311e8ac72482def19accbe&parallelism=2", b, nil)
	require.Equal(t, http.StatusOK, status, body)
	assert.Len(t, body["subtasks"], 2)

	// Another site's page may not make the server parse files.
	status, body = postMetadata(t, ts.hs.URL+"/api/savepoint/inspect", b, map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusForbidden, status)
	assert.Equal(t, CodeForbidden, body["code"])

	// Not metadata: the magic number found is named.
	status, body = postMetadata(t, ts.hs.URL+"/api/savepoint/inspect", []byte("GIF89a......"), nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Equal(t, CodeNotMetadata, body["code"])
	assert.Contains(t, body["message"], "0x47494638")

	// Too large: refused with the limit, before parsing.
	big := append(append([]byte{}, b[:8]...), make([]byte, MaxSavepointUpload)...)
	status, body = postMetadata(t, ts.hs.URL+"/api/savepoint/inspect", big, nil)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)
	assert.True(t, strings.Contains(body["message"].(string), "32 MiB"), body)

	// Empty.
	status, body = postMetadata(t, ts.hs.URL+"/api/savepoint/inspect", nil, nil)
	assert.Equal(t, http.StatusBadRequest, status)
	assert.Contains(t, body["message"], "empty")
}

// A directory pick arrives as multipart: _metadata and the state files beside
// it; the values in the files are decoded, and a path that would leave the
// directory is not read.
func TestSavepointAPIDirectoryUpload(t *testing.T) {
	ts := newTestServer(t, nil)
	dir := operatorStateDir(t)
	meta, err := os.ReadFile(filepath.Join(dir, "_metadata"))
	require.NoError(t, err)
	state, err := os.ReadFile(filepath.Join(dir, "op-0"))
	require.NoError(t, err)
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, _ := mw.CreateFormFile("metadata", "_metadata")
	part.Write(meta)
	part, _ = mw.CreateFormFile("path:op-0", "op-0")
	part.Write(state)
	require.NoError(t, mw.Close())
	status, rep := postMetadata(t, ts.hs.URL+"/api/savepoint/inspect", body.Bytes(), map[string]string{"Content-Type": mw.FormDataContentType()})
	require.Equal(t, http.StatusOK, status, rep)
	assert.EqualValues(t, 1, rep["loadedFiles"])
	lists := rep["operators"].([]any)[0].(map[string]any)["subtasks"].([]any)[0].(map[string]any)["operatorState"].([]any)
	require.Len(t, lists, 1)
	vals := lists[0].(map[string]any)["values"].([]any)
	require.Len(t, vals, 2)
	assert.Equal(t, "hello", vals[0].(map[string]any)["value"])
	assert.Equal(t, "world", vals[1].(map[string]any)["value"])

	// Without the file: the values are not decoded, and the report says why.
	status, rep = postMetadata(t, ts.hs.URL+"/api/savepoint/inspect", meta, nil)
	require.Equal(t, http.StatusOK, status)
	l := rep["operators"].([]any)[0].(map[string]any)["subtasks"].([]any)[0].(map[string]any)["operatorState"].([]any)[0].(map[string]any)
	assert.Contains(t, l["notDecoded"], "outside the _metadata file")
}
