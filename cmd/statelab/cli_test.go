package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// run runs statelab with args and stdin, returning exit code, stdout, stderr.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, IO{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return code, out.String(), errb.String()
}

func TestHelpListsCommands(t *testing.T) {
	code, out, _ := run(t, "", "help")
	require.Equal(t, 0, code)
	for _, c := range []string{"keygroup", "ranges", "repartition", "plan"} {
		assert.Contains(t, out, c)
	}
	code, _, errs := run(t, "", "frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, `unknown command "frobnicate"`)
}

func TestKeyGroupCLI(t *testing.T) {
	// "hello".hashCode() = 99162322; default max parallelism for p=2 is 128.
	code, out, _ := run(t, "", "keygroup", "--parallelism", "2", "hello")
	require.Equal(t, 0, code)
	fields := strings.Split(strings.TrimSpace(out), "\t")
	require.Len(t, fields, 4)
	assert.Equal(t, []string{"hello", "99162322"}, fields[:2])

	// stdin: one key per line, the whole line including tabs; CRLF tolerated.
	code, out, _ = run(t, "a\tb\r\n\nhello\n", "keygroup", "--parallelism", "2", "--max-parallelism", "128", "--json")
	require.Equal(t, 0, code)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3)
	var first struct {
		Key            string `json:"key"`
		JavaHash       int32  `json:"javaHash"`
		KeyGroup       int    `json:"keyGroup"`
		OperatorIndex  int    `json:"operatorIndex"`
		MaxParallelism int    `json:"maxParallelism"`
		Parallelism    int    `json:"parallelism"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &first))
	assert.Equal(t, "a\tb", first.Key)
	assert.Equal(t, int32(97*31*31+9*31+98), first.JavaHash)
	assert.Equal(t, 128, first.MaxParallelism)
	assert.Equal(t, 2, first.Parallelism)
	assert.Equal(t, first.KeyGroup*2/128, first.OperatorIndex)
	assert.Contains(t, lines[1], `"key":"","javaHash":0`)

	// long keys are JSON numbers; Long.hashCode(-1) = 0
	code, out, _ = run(t, "", "keygroup", "--parallelism", "3", "--max-parallelism", "10", "--key-type", "long", "--json", "--", "-1")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `{"key":-1,"javaHash":0,`)
}

func TestRangesCLI(t *testing.T) {
	code, out, _ := run(t, "", "ranges", "--max-parallelism", "10", "--parallelism", "3")
	require.Equal(t, 0, code)
	assert.Equal(t, "0\t0\t3\n1\t4\t6\n2\t7\t9\n", out)
	code, out, _ = run(t, "", "ranges", "--parallelism", "3", "--json")
	require.Equal(t, 0, code)
	assert.Equal(t, `{"subtask":0,"start":0,"end":42,"maxParallelism":128,"parallelism":3}`, strings.Split(out, "\n")[0])
}

func TestRepartitionCLI(t *testing.T) {
	in := `{"newParallelism":2,"subtasks":[{"offsets":{"mode":"SPLIT_DISTRIBUTE","elements":["p0","p1","p2","p3","p4"]}}]}`
	code, out, errs := run(t, in, "repartition")
	require.Equal(t, 0, code, errs)
	assert.JSONEq(t, `{"subtasks":[{"offsets":["p0","p1","p2"]},{"offsets":["p3","p4"]}]}`, out)
}

func TestPlanCLI(t *testing.T) {
	code, out, _ := run(t, "", "plan", "--max-parallelism", "10", "--from", "2", "--to", "3", "--json")
	require.Equal(t, 0, code)
	var p struct {
		Moved    []int `json:"moved"`
		Subtasks []struct {
			Reads []struct {
				OldSubtask int `json:"oldSubtask"`
			} `json:"reads"`
		} `json:"subtasks"`
		NaiveMovedShare float64 `json:"naiveMovedShare"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &p))
	assert.Equal(t, []int{4, 7, 8, 9}, p.Moved)
	assert.Len(t, p.Subtasks[1].Reads, 2)
	assert.InDelta(t, 2.0/3, p.NaiveMovedShare, 1e-9)
	code, out, _ = run(t, "", "plan", "--max-parallelism", "10", "--from", "2", "--to", "3")
	require.Equal(t, 0, code)
	assert.Contains(t, out, "Key groups that change subtask: 4 of 10")
	assert.Contains(t, out, "subtask 1 owns key groups [4, 6], reads: [4, 4] from old subtask 0, [5, 6] from old subtask 1")
}

// Bad input: exit 2 and exactly one line that says what was wrong and what is allowed.
func TestBadInput(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		says  string
	}{
		{"parallelism 0", "", []string{"keygroup", "--parallelism", "0", "k"}, "not within 1..32768"},
		{"parallelism too high", "", []string{"ranges", "--parallelism", "32769"}, "not within 1..32768"},
		{"above max", "", []string{"ranges", "--parallelism", "11", "--max-parallelism", "10"}, "parallelism 11 is above max parallelism 10"},
		{"max too high", "", []string{"ranges", "--parallelism", "2", "--max-parallelism", "40000"}, "max parallelism 40000 is not within 1..32768"},
		{"no parallelism", "", []string{"keygroup", "k"}, "--parallelism is required"},
		{"unknown key type", "", []string{"keygroup", "--parallelism", "2", "--key-type", "uuid", "k"}, `unknown key type "uuid" (allowed: string, int, long)`},
		{"bad long", "", []string{"keygroup", "--parallelism", "2", "--key-type", "long", "12x"}, `key "12x" is not a long`},
		{"long overflow on stdin", "1\n99999999999999999999\n", []string{"keygroup", "--parallelism", "2", "--key-type", "long"}, "stdin line 2"},
		{"int overflow", "", []string{"keygroup", "--parallelism", "2", "--key-type", "int", "2147483648"}, "is not an int"},
		{"unknown flag", "", []string{"ranges", "--parallelism", "2", "--fast"}, "flag provided but not defined"},
		{"malformed json", `{"newParallelism":2,`, []string{"repartition"}, "malformed input"},
		{"bad mode", `{"newParallelism":2,"subtasks":[{"s":{"mode":"RANDOM","elements":[]}}]}`, []string{"repartition"}, "want SPLIT_DISTRIBUTE, UNION or BROADCAST"},
		{"missing newParallelism", `{"subtasks":[{}]}`, []string{"repartition"}, `missing "newParallelism"`},
		{"newParallelism 0", `{"newParallelism":0,"subtasks":[{}]}`, []string{"repartition"}, "new parallelism 0 is not within 1..32768"},
		{"plan above max", "", []string{"plan", "--max-parallelism", "10", "--from", "2", "--to", "11"}, "above max parallelism 10"},
		{"plan missing to", "", []string{"plan", "--from", "2"}, "--from and --to are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := run(t, tc.stdin, tc.args...)
			assert.Equal(t, 2, code)
			assert.Contains(t, errs, tc.says)
			assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
		})
	}
}

// 100,000 keys from stdin; the benchmark reports the time (see the issue note).
func BenchmarkKeyGroupCLI100k(b *testing.B) {
	var sb strings.Builder
	for i := range 100_000 {
		sb.WriteString("user-")
		sb.WriteString(strings.Repeat("x", i%20))
		sb.WriteByte('\n')
	}
	in := sb.String()
	b.ResetTimer()
	for range b.N {
		var out bytes.Buffer
		if Main(context.Background(), []string{"keygroup", "--parallelism", "4"}, IO{In: strings.NewReader(in), Out: &out, Err: &out}) != 0 {
			b.Fatal(out.String())
		}
	}
}
