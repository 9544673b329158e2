package main

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChaosCLI(t *testing.T) {
	line := regexp.MustCompile(`^exactly-once: ok \(keys=\d+, records=400, crashes=2, rescales=1, restores=\d+\)\n$`)
	code, out, errs := run(t, "", "chaos", "--seed", "3", "--records", "400", "--crashes", "2", "--rescales", "1")
	require.Equal(t, 0, code, errs)
	assert.Regexp(t, line, out)
	_, again, _ := run(t, "", "chaos", "--seed", "3", "--records", "400", "--crashes", "2", "--rescales", "1")
	assert.Equal(t, out, again, "--driver step prints the same line for the same seed")

	code, out, _ = run(t, "", "chaos", "--seed", "4", "--records", "300", "--sink", "at-least-once")
	require.Equal(t, 0, code)
	assert.Regexp(t, `^at-least-once: ok \(keys=\d+, records=300, duplicates=\d+, losses=0, crashes=3, rescales=2, restores=\d+\)\n$`, out)

	code, out, _ = run(t, "", "chaos", "--seed", "5", "--records", "200", "--json")
	require.Equal(t, 0, code)
	var res struct {
		OK      bool  `json:"ok"`
		Records int64 `json:"records"`
		Crashes int   `json:"crashes"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.True(t, res.OK)
	assert.Equal(t, int64(200), res.Records)
	assert.Equal(t, 3, res.Crashes)
}

func TestChaosCLIUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"chaos"}, "--seed is required"},
		{[]string{"chaos", "--seed", "1", "--backend", "rocksdb"}, `backend "rocksdb" (want memory, fs or pebble)`},
		{[]string{"chaos", "--seed", "1", "--driver", "fast"}, `driver "fast" (want step or live)`},
		{[]string{"chaos", "--seed", "1", "--sink", "maybe"}, `sink "maybe"`},
		{[]string{"chaos", "--seed", "1", "--records", "0"}, "--records must be at least 1"},
		{[]string{"chaos", "--seed", "x"}, "invalid value"},
		{[]string{"chaos", "--seed", "1", "extra"}, `unexpected argument "extra"`},
	}
	for _, tc := range tests {
		code, _, errs := run(t, "", tc.args...)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, errs, tc.want, tc.args)
	}
}
