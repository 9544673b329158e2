package lessons

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/catalog"
)

// lessonSample is a valid value of a catalogue argument for the fixture
// lesson's job (source, tokenizer, count, sink on tm-1 …).
func lessonSample(cmd string, a catalog.Arg) any {
	switch {
	case a.Name == "operator" && cmd == "inject":
		return "source"
	case a.Name == "operator":
		return "count"
	case a.Name == "taskManager":
		return "tm-1"
	case a.Name == "job":
		return MainJob
	case a.Name == "index" || a.Name == "partition":
		return 0
	case a.Type == catalog.Bool:
		return true
	case len(a.Values) > 0:
		return a.Values[0]
	case a.Type == catalog.Text:
		return "a b"
	case a.HasMin:
		if a.Type == catalog.Int {
			return int(a.Min)
		}
		return a.Min
	}
	return 1
}

// The lessons' lint accepts exactly the catalogue's lesson commands, with
// the catalogue's arguments and bounds: a command, an argument or a bound
// that drifts from the catalogue fails here.
func TestLintFollowsTheCommandCatalogue(t *testing.T) {
	c, err := Load(mapFS(fixture()))
	require.NoError(t, err)
	l := c.Lessons[0]
	spec, err := l.Job(MainJob)
	require.NoError(t, err)
	check := func(name string, args map[string]any) error {
		js := newJobState(MainJob, spec)
		return l.checkAction(Action{Name: name, Args: args}, &js)
	}
	for _, cmd := range catalog.Commands {
		t.Run(cmd.Name, func(t *testing.T) {
			if !cmd.Lesson {
				assert.Error(t, check(cmd.Name, nil), "a lesson may not use %s", cmd.Name)
				assert.NotContains(t, CommandNames, cmd.Name)
				return
			}
			assert.Contains(t, CommandNames, cmd.Name)
			valid := map[string]any{}
			for _, a := range cmd.Args {
				if !a.NotInLessons && (a.Required || len(cmd.OneOf) > 0 && a.Name == cmd.OneOf[0]) {
					valid[a.Name] = lessonSample(cmd.Name, a)
				}
			}
			require.NoError(t, check(cmd.Name, valid), "%s %v", cmd.Name, valid)
			with := func(k string, v any) map[string]any {
				m := map[string]any{}
				for kk, vv := range valid {
					m[kk] = vv
				}
				m[k] = v
				return m
			}
			assert.Error(t, check(cmd.Name, with("noSuchArgument", 1)), "an unknown argument is refused")
			for _, a := range cmd.Args {
				if a.NotInLessons {
					assert.Error(t, check(cmd.Name, with(a.Name, lessonSample(cmd.Name, a))), "%s.%s is not for lessons", cmd.Name, a.Name)
					continue
				}
				assert.NoError(t, check(cmd.Name, with(a.Name, lessonSample(cmd.Name, a))), "%s.%s", cmd.Name, a.Name)
				if a.Required {
					without := with(a.Name, nil)
					delete(without, a.Name)
					assert.Error(t, check(cmd.Name, without), "%s needs %s", cmd.Name, a.Name)
				}
				if a.HasMin && a.Name != "partition" { // a partition's bound is the source's
					below := a.Min - 1
					if a.Type == catalog.Number {
						below = a.Min / 2
					}
					assert.Error(t, check(cmd.Name, with(a.Name, num(a, below))), "%s.%s below %g", cmd.Name, a.Name, a.Min)
				}
				if a.HasMax && a.Name != "parallelism" { // the fixture's operators cannot take 32768 subtasks, but the lint lets the engine say so
					assert.NoError(t, check(cmd.Name, with(a.Name, num(a, a.Max))), "%s.%s at %g", cmd.Name, a.Name, a.Max)
				}
				if a.HasMax {
					assert.Error(t, check(cmd.Name, with(a.Name, num(a, a.Max+1))), "%s.%s above %g", cmd.Name, a.Name, a.Max)
				}
				if a.MaxRunes > 0 {
					assert.NoError(t, check(cmd.Name, with(a.Name, strings.Repeat("a", a.MaxRunes))))
					assert.Error(t, check(cmd.Name, with(a.Name, strings.Repeat("a", a.MaxRunes+1))), "%s.%s longer than %d", cmd.Name, a.Name, a.MaxRunes)
				}
			}
		})
	}
}

func num(a catalog.Arg, v float64) any {
	if a.Type == catalog.Int {
		return int(v)
	}
	return v
}
