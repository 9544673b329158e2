package web

import (
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestExplainNamesWhoActed: every story title explain.js words by who acted
// (ta) has a text for the viewer who acted and one for a classroom follower,
// who watches the presenter act, in both languages; and the follower's text
// never says "you"/"你" did it.
func TestExplainNamesWhoActed(t *testing.T) {
	src, err := os.ReadFile("../static/js/views/explain.js")
	require.NoError(t, err)
	keys := regexp.MustCompile(`ta\(\s*'([a-zA-Z.]+)'`).FindAllStringSubmatch(string(src), -1)
	// The checkpoint/savepoint title is chosen by a ternary inside ta(…).
	keys = append(keys, regexp.MustCompile(`ta\([^)]*\? '([a-zA-Z.]+)' : '([a-zA-Z.]+)'`).FindAllStringSubmatch(string(src), -1)...)
	require.GreaterOrEqual(t, len(keys), 5, "explain.js words its titles with ta")
	c, err := LoadCatalog()
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, m := range keys {
		for _, k := range m[1:] {
			seen[k] = true
		}
	}
	for _, want := range []string{"explain.crashSubtask.title", "explain.crashTm.title", "explain.checkpoint.title", "explain.savepoint.title", "explain.inject.title", "explain.try"} {
		assert.True(t, seen[want], "%s is worded by who acted", want)
	}
	for k := range seen {
		for _, lang := range []string{"en", "zh"} {
			_, ok := c.msgs[lang][k]
			assert.True(t, ok, "%s: %s", lang, k)
			f, ok := c.msgs[lang][k+".presenter"]
			if assert.True(t, ok, "%s: %s.presenter", lang, k) {
				assert.NotRegexp(t, `(?i)^(you|你)`, f, "%s: %s.presenter says who acted", lang, k)
			}
		}
		assert.Contains(t, c.msgs["en"][k+".presenter"], "presenter")
		assert.Contains(t, c.msgs["zh"][k+".presenter"], "演示者")
	}
}
