package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/statelab/statelab/lessons"
)

func init() {
	register(command{name: "lessons", summary: "list the lessons, or play them headlessly and check every step (lessons list | lessons check [slug…])", run: runLessons})
}

func runLessons(ctx context.Context, args []string, io IO) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(io.Out, "Usage: statelab lessons list [--lang en|zh] [--json]")
			fmt.Fprintln(io.Out, "       statelab lessons check [slug…]")
			return exitOK
		}
		code, _ := usageError(io, "statelab lessons", "say list or check (e.g. statelab lessons check 01-why-state)")
		return code
	}
	switch args[0] {
	case "list":
		return runLessonsList(args[1:], io)
	case "check":
		return runLessonsCheck(ctx, args[1:], io)
	}
	code, _ := usageError(io, "statelab lessons", "unknown subcommand %q (want list or check)", args[0])
	return code
}

// loadLessons loads the embedded lessons; a lint failure is the content's
// fault, not the caller's, so it exits 1 with every problem listed.
func loadLessons(io IO) (*lessons.Catalog, int) {
	c, err := lessons.Default()
	if err != nil {
		fmt.Fprintf(io.Err, "statelab lessons: %v\n", err)
		return nil, exitFail
	}
	return c, exitOK
}

func runLessonsList(args []string, io IO) int {
	fs := newFlagSet("lessons list")
	lang := fs.String("lang", "en", "language of the titles: en or zh")
	asJSON := fs.Bool("json", false, "print one JSON object per lesson")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if fs.NArg() > 0 {
		code, _ := usageError(io, fs.Name(), "unexpected argument %q (list takes only flags)", fs.Arg(0))
		return code
	}
	l := lessons.Lang(*lang)
	if l != lessons.EN && l != lessons.ZH {
		code, _ := usageError(io, fs.Name(), "--lang %q: want en or zh", *lang)
		return code
	}
	c, code := loadLessons(io)
	if c == nil {
		return code
	}
	enc := json.NewEncoder(io.Out)
	for _, ls := range c.Lessons {
		if *asJSON {
			steps := make([]string, len(ls.Steps))
			for i, s := range ls.Steps {
				steps[i] = s.ID
			}
			doc := struct {
				Slug    string   `json:"slug"`
				Minutes int      `json:"minutes"`
				Title   string   `json:"title"`
				Summary string   `json:"summary"`
				Steps   []string `json:"steps"`
			}{ls.Slug, ls.Minutes, ls.Text[l].Title, ls.Text[l].Summary, steps}
			if err := enc.Encode(doc); err != nil {
				return exitFail
			}
			continue
		}
		fmt.Fprintf(io.Out, "%s\t%d min\t%d steps\t%s\n", ls.Slug, ls.Minutes, len(ls.Steps), ls.Text[l].Title)
	}
	return exitOK
}

func runLessonsCheck(ctx context.Context, args []string, io IO) int {
	fs := newFlagSet("lessons check")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	c, code := loadLessons(io)
	if c == nil {
		return code
	}
	slugs := fs.Args()
	for _, s := range slugs {
		if _, ok := c.Lesson(s); !ok {
			names := make([]string, len(c.Lessons))
			for i, l := range c.Lessons {
				names[i] = l.Slug
			}
			code, _ := usageError(io, fs.Name(), "no lesson %q (lessons: %s)", s, strings.Join(names, ", "))
			return code
		}
	}
	began := time.Now()
	passed, failed := 0, 0
	err := c.CheckAll(ctx, slugs, lessons.RunOptions{}, func(rep *lessons.Report, err error) {
		if err != nil {
			failed++
			fmt.Fprintf(io.Out, "FAIL %v\n", err)
			return
		}
		passed++
		fmt.Fprintf(io.Out, "ok   %s\t%d steps\t%d engine steps\t%s\n", rep.Lesson, len(rep.Steps), rep.EngineSteps, rep.Elapsed.Round(time.Millisecond))
	})
	fmt.Fprintf(io.Out, "%d passed, %d failed in %s\n", passed, failed, time.Since(began).Round(100*time.Millisecond))
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(io.Err, "statelab lessons check: interrupted")
	}
	return exitFail
}
