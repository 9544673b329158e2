package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLessonsList(t *testing.T) {
	code, out, _ := run(t, "", "lessons", "list")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.GreaterOrEqual(t, len(lines), 12)
	assert.Equal(t, []string{"01-why-state", "6 min", "5 steps", "Why streaming needs state"}, strings.Split(lines[0], "\t"))

	code, out, _ = run(t, "", "lessons", "list", "--lang", "zh", "--json")
	require.Equal(t, 0, code)
	var first struct {
		Slug  string   `json:"slug"`
		Title string   `json:"title"`
		Steps []string `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &first))
	assert.Equal(t, "01-why-state", first.Slug)
	assert.Equal(t, "流处理为什么需要状态", first.Title)
	assert.Equal(t, "type-a-line", first.Steps[0])
}

func TestLessonsCheckOne(t *testing.T) {
	code, out, errs := run(t, "", "lessons", "check", "01-why-state")
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "ok   01-why-state\t5 steps")
	assert.Contains(t, out, "1 passed, 0 failed")
}

func TestLessonsUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lessons"}, "say list, check or new"},
		{[]string{"lessons", "run"}, `unknown subcommand "run"`},
		{[]string{"lessons", "check", "99-nope"}, `no lesson "99-nope"`},
		{[]string{"lessons", "list", "--lang", "fr"}, `--lang "fr": want en or zh`},
	} {
		code, _, errs := run(t, "", tc.args...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, errs, tc.want, tc.args)
	}
}
