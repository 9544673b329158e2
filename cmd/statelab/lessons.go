package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/statelab/statelab/lessons"
)

func init() {
	register(command{name: "lessons", summary: "list the lessons, play them headlessly and check every step, or write your own (lessons list | check [slug…] | check --dir DIR | new SLUG | predicates)", run: runLessons})
}

func runLessons(ctx context.Context, args []string, io IO) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") {
			fmt.Fprintln(io.Out, "Usage: statelab lessons list [--lang en|zh] [--json]")
			fmt.Fprintln(io.Out, "       statelab lessons check [slug…]")
			fmt.Fprintln(io.Out, "       statelab lessons check --dir DIR   (your own lessons: one lesson folder, or a folder of them)")
			fmt.Fprintln(io.Out, "       statelab lessons new [--dir DIR] NN-words   (a new lesson folder that passes check as written)")
			fmt.Fprintln(io.Out, "       statelab lessons predicates   (every check predicate, with an example: docs/predicates.md)")
			return exitOK
		}
		code, _ := usageError(io, "statelab lessons", "say list, check or new (e.g. statelab lessons check 01-why-state)")
		return code
	}
	switch args[0] {
	case "list":
		return runLessonsList(args[1:], io)
	case "check":
		return runLessonsCheck(ctx, args[1:], io)
	case "new":
		return runLessonsNew(args[1:], io)
	case "predicates":
		if len(args) > 1 {
			code, _ := usageError(io, "statelab lessons predicates", "unexpected argument %q (it takes none)", args[1])
			return code
		}
		c, code := loadLessons(io)
		if c == nil {
			return code
		}
		fmt.Fprint(io.Out, lessons.PredicateReference(c))
		return exitOK
	}
	code, _ := usageError(io, "statelab lessons", "unknown subcommand %q (want list, check, new or predicates)", args[0])
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
	dir := fs.String("dir", "", "check your own lessons in this folder (one lesson folder, or a folder of lesson folders) instead of the built-in ones")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if *dir != "" {
		if fs.NArg() > 0 {
			code, _ := usageError(io, fs.Name(), "unexpected argument %q: with --dir every lesson in the folder is checked", fs.Arg(0))
			return code
		}
		return checkLessonDir(ctx, *dir, io)
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

// checkLessonDir lints and plays an instructor's lessons, reporting every
// defect as file:line, and plays each step without its actions too: a check
// that holds anyway proves nothing (Lesson.RunStrict).
func checkLessonDir(ctx context.Context, dir string, io IO) int {
	ls, root, err := lessons.LoadDir(dir)
	var le *lessons.LintError
	switch {
	case errors.As(err, &le):
		for _, p := range le.Problems {
			fmt.Fprintln(io.Out, p.At(root))
		}
		fmt.Fprintf(io.Out, "%d problem(s); nothing was played\n", len(le.Problems))
		return exitFail
	case err != nil:
		fmt.Fprintf(io.Err, "statelab lessons check: %v\n", err)
		return exitUsage
	}
	builtin, code := loadLessons(io)
	if builtin == nil {
		return code
	}
	if _, err := builtin.With(ls); err != nil {
		fmt.Fprintf(io.Out, "%v\n", err)
		return exitFail
	}
	passed, failed := 0, 0
	for _, l := range ls {
		rep, err := l.RunStrict(ctx, lessons.RunOptions{})
		var f *lessons.Failure
		switch {
		case errors.As(err, &f):
			failed++
			at := filepath.Join(root, l.Slug, "scenario.yaml")
			if f.StepIndex < len(l.Steps) && l.Steps[f.StepIndex].Line > 0 {
				at += fmt.Sprintf(":%d", l.Steps[f.StepIndex].Line)
			}
			fmt.Fprintf(io.Out, "%s: FAIL %v\n", at, err)
		case err != nil:
			fmt.Fprintf(io.Err, "statelab lessons check: %v\n", err)
			return exitFail
		default:
			passed++
			fmt.Fprintf(io.Out, "ok   %s\t%d steps\t%d engine steps\t%s\n", rep.Lesson, len(rep.Steps), rep.EngineSteps, rep.Elapsed.Round(time.Millisecond))
		}
	}
	fmt.Fprintf(io.Out, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return exitFail
	}
	return exitOK
}

// runLessonsNew writes a new lesson folder that passes 'lessons check --dir'.
func runLessonsNew(args []string, io IO) int {
	fs := newFlagSet("lessons new")
	dir := fs.String("dir", ".", "folder to create the lesson folder in")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if fs.NArg() != 1 {
		code, _ := usageError(io, fs.Name(), "give the lesson's folder name, NN-words (e.g. statelab lessons new 13-my-lesson)")
		return code
	}
	slug := fs.Arg(0)
	files, err := lessons.Scaffold(slug)
	if err != nil {
		code, _ := usageError(io, fs.Name(), "%v", err)
		return code
	}
	if c, err := lessons.Default(); err == nil {
		if _, err := c.With([]*lessons.Lesson{{Slug: slug, Number: lessonNumber(slug)}}); err != nil {
			code, _ := usageError(io, fs.Name(), "%v", err)
			return code
		}
	}
	target := filepath.Join(*dir, slug)
	if _, err := os.Stat(target); err == nil {
		code, _ := usageError(io, fs.Name(), "%s exists already; choose another name or remove it", target)
		return code
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		fmt.Fprintf(io.Err, "statelab lessons new: %v\n", err)
		return exitFail
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(target, name), []byte(files[name]), 0o644); err != nil {
			fmt.Fprintf(io.Err, "statelab lessons new: %v\n", err)
			return exitFail
		}
		fmt.Fprintf(io.Out, "wrote %s\n", filepath.Join(target, name))
	}
	fmt.Fprintf(io.Out, "Check it: statelab lessons check --dir %s\nServe it: statelab serve --lessons %s\n", target, *dir)
	return exitOK
}

// lessonNumber is the NN of a valid slug NN-words.
func lessonNumber(slug string) int {
	n := 0
	for _, r := range slug {
		if r < '0' || r > '9' {
			break
		}
		n = n*10 + int(r-'0')
	}
	return n
}

// courseWith is the built-in course with an instructor's lessons from dir
// added (serve --lessons); nil when dir is empty (the web server then uses
// the built-in course). A lesson that does not lint is a usage error, each
// defect printed as file:line.
func courseWith(dir string, io IO) (*lessons.Catalog, int) {
	if dir == "" {
		return nil, exitOK
	}
	builtin, code := loadLessons(io)
	if builtin == nil {
		return nil, code
	}
	ls, root, err := lessons.LoadDir(dir)
	var le *lessons.LintError
	switch {
	case errors.As(err, &le):
		for _, p := range le.Problems {
			fmt.Fprintf(io.Err, "statelab serve: %s\n", p.At(root))
		}
		fmt.Fprintf(io.Err, "statelab serve: --lessons %s: %d problem(s); fix them ('statelab lessons check --dir %s') and start again\n", dir, len(le.Problems), dir)
		return nil, exitUsage
	case err != nil:
		fmt.Fprintf(io.Err, "statelab serve: --lessons: %v\n", err)
		return nil, exitUsage
	}
	c, err := builtin.With(ls)
	if err != nil {
		fmt.Fprintf(io.Err, "statelab serve: --lessons: %v\n", err)
		return nil, exitUsage
	}
	for _, l := range ls {
		fmt.Fprintf(io.Out, "Added lesson %s (%s)\n", l.Slug, l.Text[lessons.EN].Title)
	}
	return c, exitOK
}
