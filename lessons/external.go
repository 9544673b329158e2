package lessons

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// LoadDir reads an instructor's own lessons from dir on disk and lints them
// as Load does. dir is either one lesson folder (it holds scenario.yaml and
// its name is the slug, e.g. 13-my-lesson) or a folder of lesson folders.
// No glossary is needed: the course's glossary serves them. root is the
// folder the lessons' slugs are relative to, for Problem.At; the error is a
// *LintError when a lesson has a defect.
func LoadDir(dir string) (ls []*Lesson, root string, err error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, "", fmt.Errorf("lessons: cannot read the lesson folder %s: %w", dir, err)
	}
	if !info.IsDir() {
		return nil, "", fmt.Errorf("lessons: %s is a file; give a lesson folder (one that holds scenario.yaml) or a folder of lesson folders", dir)
	}
	dir = filepath.Clean(dir)
	var names []string
	if _, err := os.Stat(filepath.Join(dir, "scenario.yaml")); err == nil {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, "", fmt.Errorf("lessons: %w", err)
		}
		root, names = filepath.Dir(dir), []string{filepath.Base(abs)}
		if filepath.Base(dir) != filepath.Base(abs) { // dir is "." or ends in ".."
			root = filepath.Dir(abs)
		}
	} else {
		root = dir
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, "", fmt.Errorf("lessons: cannot read the lesson folder %s: %w", dir, err)
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "scenario.yaml")); errors.Is(err, fs.ErrNotExist) && !reSlug.MatchString(e.Name()) {
				continue // not a lesson: an instructor's other folders
			}
			names = append(names, e.Name())
		}
		if len(names) == 0 {
			return nil, root, fmt.Errorf("lessons: %s holds no lesson: neither a scenario.yaml nor a folder NN-words with one (create one with 'statelab lessons new 13-my-lesson')", dir)
		}
	}
	ls, problems := loadFolders(os.DirFS(root), names)
	if len(problems) > 0 {
		return ls, root, &LintError{Problems: problems}
	}
	return ls, root, nil
}

// With returns a catalog of c's lessons and extra (an instructor's), in the
// order of their numbers, sharing c's glossary. A slug or a number that is
// taken already is an error: the number orders the course and the slug is
// the lesson's address.
func (c *Catalog) With(extra []*Lesson) (*Catalog, error) {
	out := &Catalog{Glossary: c.Glossary, Lessons: slices.Clone(c.Lessons)}
	var taken []string
	for _, l := range extra {
		for _, o := range out.Lessons {
			if o.Slug == l.Slug || o.Number == l.Number {
				taken = append(taken, fmt.Sprintf("%s: the number %02d is %s's already", l.Slug, l.Number, o.Slug))
				break
			}
		}
		out.Lessons = append(out.Lessons, l)
	}
	if len(taken) > 0 {
		last := 0
		for _, l := range c.Lessons {
			last = max(last, l.Number)
		}
		return nil, fmt.Errorf("lessons: %s; number your lessons from %02d", strings.Join(taken, "; "), last+1)
	}
	slices.SortStableFunc(out.Lessons, func(a, b *Lesson) int { return a.Number - b.Number })
	if ps := checkAfter(out.Lessons); len(ps) > 0 {
		return nil, &LintError{Problems: ps}
	}
	return out, nil
}
