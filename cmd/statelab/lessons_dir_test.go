package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/lessons"
)

// nextNumber is the first lesson number the course leaves free, and mySlug
// an instructor's lesson numbered with it: the course grows, so the tests
// take both from it rather than from a number written down once.
var nextNumber, mySlug = func() (string, string) {
	c, err := lessons.Default()
	if err != nil {
		panic(err)
	}
	n := fmt.Sprintf("%02d", len(c.Lessons)+1)
	return n, n + "-my-lesson"
}()

// lineOf is the 1-based line of the first line of file that contains s.
func lineOf(t *testing.T, file, s string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, s) {
			return i + 1
		}
	}
	t.Fatalf("%s has no line with %q", file, s)
	return 0
}

func edit(t *testing.T, file, old, new string) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(b), old)
	require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
}

// An instructor scaffolds a lesson, checks it, and breaks it four ways; each
// break is reported as file:line with what is wrong.
func TestLessonsNewThenCheckDir(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := run(t, "", "lessons", "new", "--dir", dir, mySlug)
	require.Equal(t, 0, code, errs)
	lesson := filepath.Join(dir, mySlug)
	for _, f := range []string{"scenario.yaml", "lesson.en.md", "lesson.zh.md"} {
		assert.FileExists(t, filepath.Join(lesson, f))
		assert.Contains(t, out, filepath.Join(lesson, f))
	}

	// As generated, it passes, alone and as a folder of lessons.
	for _, d := range []string{lesson, dir} {
		code, out, errs = run(t, "", "lessons", "check", "--dir", d)
		require.Equal(t, 0, code, out+errs)
		assert.Contains(t, out, "ok   "+mySlug+"\t1 steps")
		assert.Contains(t, out, "1 passed, 0 failed")
	}

	// A second scaffold of the same name, a taken number, a bad name.
	code, _, errs = run(t, "", "lessons", "new", "--dir", dir, mySlug)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "exists already")
	code, _, errs = run(t, "", "lessons", "new", "--dir", dir, "05-mine")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "the number 05 is 05-failure-and-recovery's already; number your lessons from "+nextNumber)
	code, _, errs = run(t, "", "lessons", "new", "--dir", dir, "my-lesson")
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "a lesson folder is named NN-words")

	scen := filepath.Join(lesson, "scenario.yaml")
	const check = "keyed-state: {operator: count, key: hello, equals: 2}"
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T) // breaks the lesson
		want   func(t *testing.T) string
	}{
		{"unknown predicate", func(t *testing.T) { edit(t, scen, check, "keyed-stat: {operator: count, key: hello, equals: 2}") },
			func(t *testing.T) string {
				return fmt.Sprintf("%s:%d: step type-a-line: check unknown predicate \"keyed-stat\" (known: ", scen, lineOf(t, scen, "keyed-stat:"))
			}},
		{"bad argument", func(t *testing.T) { edit(t, scen, "key: hello, equals: 2", "key: hello, equal: 2") },
			func(t *testing.T) string {
				return fmt.Sprintf("%s:%d: step type-a-line: check keyed-state", scen, lineOf(t, scen, "equal: 2"))
			}},
		{"bad YAML", func(t *testing.T) {
			edit(t, scen, "  name: "+mySlug+"\n", "  name: "+mySlug+"\n   backend: x: y\n")
		},
			func(t *testing.T) string {
				return fmt.Sprintf("%s:%d: cannot read the scenario: yaml: line %d: ", scen, lineOf(t, scen, "backend: x: y"), lineOf(t, scen, "backend: x: y"))
			}},
		{"missing translation", func(t *testing.T) { require.NoError(t, os.Remove(filepath.Join(lesson, "lesson.zh.md"))) },
			func(t *testing.T) string {
				return filepath.Join(lesson, "lesson.zh.md") + ": the zh translation is missing"
			}},
		{"step without a hint", func(t *testing.T) {
			edit(t, filepath.Join(lesson, "lesson.en.md"), "> [!hint]\n", "")
		}, func(t *testing.T) string {
			en := filepath.Join(lesson, "lesson.en.md")
			return fmt.Sprintf("%s:%d: step type-a-line: the step has no hint", en, lineOf(t, en, "{step=type-a-line}"))
		}},
		{"check that holds before its step", func(t *testing.T) { edit(t, scen, check, "all-running: {}") },
			func(t *testing.T) string {
				return fmt.Sprintf("%s:%d: FAIL lesson "+mySlug+", step 1 \"type-a-line\": the check already holds before its step", scen, lineOf(t, scen, "- id: type-a-line"))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := map[string][]byte{}
			for _, f := range []string{"scenario.yaml", "lesson.en.md", "lesson.zh.md"} {
				b, err := os.ReadFile(filepath.Join(lesson, f))
				require.NoError(t, err)
				saved[f] = b
			}
			defer func() {
				for f, b := range saved {
					require.NoError(t, os.WriteFile(filepath.Join(lesson, f), b, 0o644))
				}
			}()
			tc.break_(t)
			want := tc.want(t)
			code, out, errs := run(t, "", "lessons", "check", "--dir", dir)
			assert.Equal(t, 1, code, out+errs)
			assert.Contains(t, out, want)
		})
	}

	code, _, errs = run(t, "", "lessons", "check", "--dir", filepath.Join(dir, "nope"))
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, "cannot read the lesson folder")
}

// serve --lessons adds an instructor's lesson to the course: it is listed
// and its page opens; a folder with a defect stops the server from
// starting, naming file:line.
func TestServeWithInstructorLessons(t *testing.T) {
	dir := t.TempDir()
	code, _, errs := run(t, "", "lessons", "new", "--dir", dir, mySlug)
	require.Equal(t, 0, code, errs)
	en := filepath.Join(dir, mySlug, "lesson.en.md")
	edit(t, en, "title: My lesson\n", "title: Counting hellos in class\n")
	edit(t, en, "## Type a line {step=type-a-line}", "## Say hello twice {step=type-a-line}")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--quiet", "--lessons", dir}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	}()
	re := regexp.MustCompile(`running at (http://127\.0\.0\.1:\d+/)`)
	var url string
	for deadline := time.Now().Add(60 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
	}
	require.NotEmpty(t, url, "stdout: %q stderr: %q", out.String(), errb.String())
	assert.Contains(t, out.String(), "Added lesson "+mySlug+" (Counting hellos in class)")
	get := func(path string) string {
		resp, err := http.Get(url + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		return string(b)
	}
	list := get("lessons")
	assert.Contains(t, list, "Counting hellos in class")
	assert.Contains(t, list, "/lessons/"+mySlug)
	assert.Contains(t, get("lessons/"+mySlug), "Say hello twice")
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, errb.String())
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop")
	}

	// A defect: the server does not start, and says where.
	scen := filepath.Join(dir, mySlug, "scenario.yaml")
	edit(t, scen, "keyed-state:", "keyed-stat:")
	code, _, errs = run(t, "", "serve", "--addr", "127.0.0.1:0", "--data", t.TempDir(), "--lessons", dir)
	assert.Equal(t, 2, code)
	assert.Contains(t, errs, fmt.Sprintf("%s:%d: step type-a-line: check unknown predicate \"keyed-stat\"", scen, lineOf(t, scen, "keyed-stat:")))
	assert.Contains(t, errs, "fix them ('statelab lessons check --dir")
}

// The predicate reference an instructor reads without the repository is the
// file in docs/.
func TestLessonsPredicatesIsTheDoc(t *testing.T) {
	code, out, errs := run(t, "", "lessons", "predicates")
	require.Equal(t, 0, code, errs)
	doc, err := os.ReadFile("../../docs/predicates.md")
	require.NoError(t, err)
	assert.Equal(t, string(doc), out)
	assert.Contains(t, out, "\n## keyed-state\n")
}
