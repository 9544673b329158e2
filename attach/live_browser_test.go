package attach_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/web"
)

// TestBrowserAttachLiveFlink drives StateLab's /attach page, in Debian's
// chromium, against a live Flink MiniCluster (flinkref serve) and checks
// that the page draws the job's four vertices, one key-group strip whose
// 128 cells are coloured by the subtask whose keyed state backend holds
// them in Flink, and a checkpoint timeline. Skipped without chromium (E2E=1
// requires it) or without java and mvn (FLINK=1 requires them).
func TestBrowserAttachLiveFlink(t *testing.T) {
	chromium := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		if os.Getenv("E2E") == "1" {
			t.Fatal("E2E=1 but no chromium found; install it: apt-get install -y --no-install-recommends chromium")
		}
		t.Skip("no chromium; set E2E=1 to require it")
	}
	lf := startLiveFlink(t)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := web.New(web.Config{DataDir: t.TempDir(), Engines: web.NewEngine(logger), Logger: logger,
		Attach: web.AttachConfig{MinInterval: 100 * time.Millisecond, IdleTimeout: time.Minute}})
	require.NoError(t, err)
	hs := httptest.NewServer(srv.Handler())
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("no-first-run", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1440, 1000))
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		hs.CloseClientConnections()
		hs.Close()
		_ = srv.Close()
	})
	waitJS := func(d time.Duration, what, expr string) {
		t.Helper()
		deadline := time.Now().Add(d)
		for {
			ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
			if err == nil && ok {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting for %s (%s); last error %v", d, what, expr, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	// As a person does: type Flink's address into the form and attach.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(hs.URL+"/attach?lang=en")))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#attach-form`))))
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#attach-flink`), lf.Rest),
		chromedp.SetValue(chromedp.CSS(`#attach-interval`), "1s"),
		chromedp.Click(chromedp.CSS(`#attach-go`))))
	waitJS(60*time.Second, "the job graph's four vertices", `document.querySelectorAll('.attach-vertex').length === 4`)
	waitJS(30*time.Second, "one key-group strip", `document.querySelectorAll('.attach-kg').length === 1`)
	waitJS(30*time.Second, "128 key groups", `document.querySelectorAll('.attach-kg .strip:not(.attach-after) rect.kg').length === 128`)
	owners, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('.attach-kg .strip:not(.attach-after) rect.kg')].map(r => r.dataset.owner)`))
	require.NoError(t, err)
	require.Len(t, owners, 128)
	ranges := lf.KeyGroups["count"]
	require.Len(t, ranges, 3)
	for _, r := range ranges {
		for g := r.Start; g <= r.End; g++ {
			require.Equal(t, strconv.Itoa(r.Subtask), owners[g], "key group %d: Flink's count#%d holds it", g, r.Subtask)
		}
	}
	waitJS(60*time.Second, "the checkpoint timeline", `document.querySelectorAll('.attach-timeline .cp-dot').length > 0`)
	search, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.search`))
	require.NoError(t, err)
	require.Contains(t, search, "flink="+url.QueryEscape(lf.Rest))
	if dir := os.Getenv("ARTIFACTS"); dir != "" {
		if buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
			_ = os.MkdirAll(filepath.Join(dir, "attach"), 0o755)
			_ = os.WriteFile(filepath.Join(dir, "attach", "attach-live-flink.png"), buf, 0o644)
		}
	}
}
