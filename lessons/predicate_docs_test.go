package lessons

import (
	"flag"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite docs/predicates.md from the predicate table")

// docs/predicates.md is the catalogue, generated: a predicate added to the
// table without a line saying when it holds, or a file edited by hand (or
// left behind by a change to the table), fails here. Regenerate with
// go run ./cmd/statelab lessons predicates > docs/predicates.md
func TestPredicateReferenceIsTheTable(t *testing.T) {
	var names []string
	for _, p := range predicateTable {
		names = append(names, p.name)
		assert.NotEmpty(t, predicateHolds[p.name], "predicate %s: say when it holds in predicateHolds", p.name)
	}
	for n := range predicateHolds {
		assert.Contains(t, names, n, "predicateHolds has %s, which the table does not", n)
	}
	c, err := Default()
	require.NoError(t, err)
	ref := PredicateReference(c)
	const file = "../docs/predicates.md"
	if *updateDocs {
		require.NoError(t, os.WriteFile(file, []byte(ref), 0o644))
	}
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, ref, string(got), "docs/predicates.md differs from the predicate table; run: go run ./cmd/statelab lessons predicates > docs/predicates.md")

	// Every example in the file is a check the lint accepts (read back
	// from the file, not from the generator's values).
	for _, p := range predicateTable {
		assert.Contains(t, ref, "\n## "+p.name+"\n")
	}
	var examples int
	for _, block := range fencedYAML(string(got)) {
		var doc struct {
			Check []map[string]map[string]any `yaml:"check"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(block), &doc), block)
		for _, item := range doc.Check {
			for name, a := range item {
				if a == nil {
					a = map[string]any{}
				}
				_, err := newCheck(name, a)
				assert.NoError(t, err, block)
				examples++
				names = slices.DeleteFunc(names, func(n string) bool { return n == name })
			}
		}
	}
	assert.Empty(t, names, "predicates without an example")
	assert.Equal(t, len(predicateTable), examples)
}

func fencedYAML(md string) []string {
	var out []string
	var cur []byte
	in := false
	for _, line := range splitLines(md) {
		switch {
		case line == "```yaml":
			in, cur = true, nil
		case in && line == "```":
			in = false
			out = append(out, string(cur))
		case in:
			cur = append(cur, line+"\n"...)
		}
	}
	return out
}

func splitLines(s string) []string {
	var out []string
	for len(s) > 0 {
		i := 0
		for i < len(s) && s[i] != '\n' {
			i++
		}
		out = append(out, s[:i])
		if i < len(s) {
			i++
		}
		s = s[i:]
	}
	return out
}
