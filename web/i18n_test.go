package web

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var placeholder = regexp.MustCompile(`\{\w+\}|%s`)

func placeholders(s string) []string {
	p := placeholder.FindAllString(s, -1)
	sort.Strings(p)
	return p
}

func TestCataloguesAgree(t *testing.T) {
	c, err := LoadCatalog()
	require.NoError(t, err)
	assert.Empty(t, c.Missing("zh"), "every English key has a Chinese text")
	for k := range c.msgs["zh"] {
		_, ok := c.msgs["en"][k]
		assert.True(t, ok, "zh key %q has no English text", k)
	}
	for k, en := range c.msgs["en"] {
		want := placeholders(en)
		if strings.HasPrefix(k, "savepoint.reason.") {
			// A reader failure's English sentence also names the field it
			// was reading ({what}) or its English message ({detail}); the
			// Chinese one says where by offset instead
			// (savepoint.TestReasonCodesInBothCatalogues).
			want = slices.DeleteFunc(want, func(p string) bool { return p == "{what}" || p == "{detail}" })
		}
		assert.ElementsMatch(t, want, placeholders(c.msgs["zh"][k]), "placeholders of %q", k)
	}
}

func TestChineseUsesFlinksTerms(t *testing.T) {
	c, err := LoadCatalog()
	require.NoError(t, err)
	zh := c.T("zh")
	// The terms a Chinese Flink learner meets, where the English says them.
	want := map[string]string{
		"term.stateBackend": "状态后端", "term.keyGroup": "键组", "controls.checkpoint": "检查点",
		"controls.savepoint": "保存点", "graph.parallelism": "最大并行度", "inspector.operatorState": "算子状态",
		"explain.cp.align": "屏障", "explain.crashSubtask.step": "任务", "explain.rescale.plan": "子任务",
		"panel.inspector": "状态",
	}
	for k, term := range want {
		assert.Contains(t, zh(k), term, k)
	}
	for k, v := range c.msgs["zh"] {
		assert.NotContains(t, v, "国家", "%s: state is 状态, never 国家", k)
		assert.NotContains(t, v, "义务", "%s: task is 任务, never 义务", k)
	}
}

// TestPagesUseOnlyKnownKeys renders every page in both languages and fails
// on a key that has no text (T returns the key itself).
func TestPagesUseOnlyKnownKeys(t *testing.T) {
	ts := newTestServer(t, nil)
	keyLike := regexp.MustCompile(`>\s*([a-z]+\.[a-zA-Z0-9.]+)\s*<`)
	for _, path := range []string{"/", "/sandbox", "/sandbox/live?template=wordcount", "/lessons", "/classroom", "/nope"} {
		for _, lang := range []string{"en", "zh"} {
			req := httptest.NewRequest("GET", path, nil)
			req.Host = "127.0.0.1" // the server answers only its own host names (guard.go)
			req.AddCookie(httpCookie{langCookie, lang}.cookie())
			w := httptest.NewRecorder()
			ts.srv.Handler().ServeHTTP(w, req)
			body := w.Body.String()
			for _, m := range keyLike.FindAllStringSubmatch(body, -1) {
				if strings.Contains(m[1], "statelab") {
					continue
				}
				t.Errorf("%s (%s) shows an untranslated key %q", path, lang, m[1])
			}
			if lang == "zh" && path == "/sandbox" {
				assert.Contains(t, body, "状态后端")
				assert.Contains(t, body, "检查点")
			}
		}
	}
}

// Every kind of engine event the event log can show has a Chinese sentence
// (the log shows the engine's English message where the catalogue has none,
// log.js say): read from engine/events.go, so a new kind without one fails.
func TestEveryEventKindIsTranslated(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "engine", "events.go"))
	require.NoError(t, err)
	kinds := regexp.MustCompile(`EventKind = "([a-z-]+)"`).FindAllStringSubmatch(string(src), -1)
	require.Greater(t, len(kinds), 20, "engine/events.go's event kinds")
	c, err := LoadCatalog()
	require.NoError(t, err)
	logJS, err := os.ReadFile(filepath.Join("..", "static", "js", "views", "log.js"))
	require.NoError(t, err)
	for _, m := range kinds {
		kind := m[1]
		if kind == "flow" {
			continue // records moved on channels: drawn on the graph, never a line of the log
		}
		if _, ok := c.msgs["zh"]["ev."+kind]; ok {
			continue
		}
		// A kind told in variants (log.js variant: ev.taskmanager.LOST …).
		variants := 0
		for k := range c.msgs["zh"] {
			if strings.HasPrefix(k, "ev."+kind+".") {
				variants++
			}
		}
		assert.Positive(t, variants, "event kind %q has no ev.%s in the catalogue: the Chinese log would show English", kind, kind)
		assert.True(t, strings.Contains(string(logJS), "case '"+kind+"'"), "event kind %q is told in variants by log.js", kind)
	}
}
