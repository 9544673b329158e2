package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCatalogueIsWellFormed(t *testing.T) {
	for _, c := range Commands {
		for _, n := range c.OneOf {
			a, ok := c.Arg(n)
			if assert.True(t, ok, "%s: one-of argument %s is not an argument", c.Name, n) {
				assert.False(t, a.Required, "%s: one-of argument %s is optional by nature", c.Name, n)
			}
		}
		for _, a := range c.Args {
			assert.Contains(t, []Type{Int, Number, Text, Bool}, a.Type, "%s.%s", c.Name, a.Name)
			if a.HasMin && a.HasMax {
				assert.LessOrEqual(t, a.Min, a.Max, "%s.%s", c.Name, a.Name)
			}
			if a.Type != Text {
				assert.Empty(t, a.Values, "%s.%s: only text takes a list of values", c.Name, a.Name)
				assert.Zero(t, a.MaxRunes, "%s.%s", c.Name, a.Name)
			}
		}
		if c.Recorded {
			assert.False(t, c.Follower, "%s changes the job, so a follower may not send it", c.Name)
		}
	}
}

var (
	rowRE   = regexp.MustCompile("^\\| `([a-z-]+)` \\|([^|]*)\\|")
	rangeRE = func(arg string) *regexp.Regexp {
		return regexp.MustCompile("`" + regexp.QuoteMeta(arg) + "` \\(([-0-9.]+)\\s*(–|…)([^;,)]*)")
	}
)

// docs/protocol.md's command tables (| name | args | effect |) list exactly
// the catalogue's commands, name every argument, and state the catalogue's
// bounds where they give a range.
func TestProtocolDocAgrees(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "protocol.md"))
	require.NoError(t, err)
	rows := map[string]string{}
	inTable := false
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "| name | args | effect |"):
			inTable = true
		case !strings.HasPrefix(line, "|"):
			inTable = false
		case inTable:
			if m := rowRE.FindStringSubmatch(line); m != nil {
				rows[m[1]] = m[2]
			}
		}
	}
	for name := range rows {
		_, ok := Lookup(name)
		assert.True(t, ok, "docs/protocol.md documents %s, which the catalogue does not list", name)
	}
	for _, c := range Commands {
		cell, ok := rows[c.Name]
		if !assert.True(t, ok, "docs/protocol.md has no row for %s", c.Name) {
			continue
		}
		for _, a := range c.Args {
			if !assert.Contains(t, cell, "`"+a.Name+"`", "docs/protocol.md: %s does not name its argument %s", c.Name, a.Name) {
				continue
			}
			m := rangeRE(a.Name).FindStringSubmatch(cell)
			if a.HasMin && a.HasMax && m == nil {
				t.Errorf("docs/protocol.md: %s.%s is bounded %g–%g, but its row gives no range: %s", c.Name, a.Name, a.Min, a.Max, cell)
				continue
			}
			if m == nil || m[2] != "–" {
				continue // "1 … the operator's max parallelism": bounded by the job
			}
			lo, err1 := strconv.ParseFloat(m[1], 64)
			hi, err2 := strconv.ParseFloat(strings.Fields(m[3])[0], 64)
			require.NoError(t, err1, cell)
			require.NoError(t, err2, cell)
			if strings.Contains(m[3], "characters") {
				assert.Equal(t, float64(a.MaxRunes), hi, "docs/protocol.md: %s.%s's length", c.Name, a.Name)
				continue
			}
			assert.Equal(t, a.Min, lo, "docs/protocol.md: %s.%s's least value", c.Name, a.Name)
			assert.Equal(t, a.Max, hi, "docs/protocol.md: %s.%s's largest value", c.Name, a.Name)
		}
	}
}

var sendRE = regexp.MustCompile(`send\('([a-z-]+)'(?:,\s*\{([^}]*)\})?`)

// The browser sends only the catalogue's commands, with its argument names.
func TestBrowserSendsCatalogueCommands(t *testing.T) {
	seen := 0
	err := filepath.WalkDir(filepath.Join("..", "static", "js"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range sendRE.FindAllStringSubmatch(string(data), -1) {
			seen++
			c, ok := Lookup(m[1])
			if !assert.True(t, ok, "%s sends %s, which the catalogue does not list", path, m[1]) {
				continue
			}
			for _, field := range strings.Split(m[2], ",") {
				key := strings.TrimSpace(strings.SplitN(field, ":", 2)[0])
				if key == "" {
					continue
				}
				_, ok := c.Arg(key)
				assert.True(t, ok, "%s sends %s with argument %s, which the catalogue does not list", path, m[1], key)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Positive(t, seen, "no send('…') found in static/js")
}
