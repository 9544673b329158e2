package lessons

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A job spec without chaining: chains as Flink does by default
// (pipeline.operator-chaining true). The lessons draw and crash every
// operator on its own, so each of their jobs says chaining: false, and its
// graph then has one task per operator, named as the operator.
func TestEveryLessonJobTurnsChainingOff(t *testing.T) {
	c, err := Default()
	require.NoError(t, err)
	jobs := 0
	for _, l := range c.Lessons {
		for _, name := range l.JobNames() {
			spec, err := l.Job(name)
			require.NoError(t, err, "%s job %s", l.Slug, name)
			jobs++
			if !assert.NotNil(t, spec.Chaining, "%s job %s leaves chaining to Flink's default (on): say chaining: false", l.Slug, name) {
				continue
			}
			assert.False(t, *spec.Chaining, "%s job %s", l.Slug, name)
			assert.Len(t, spec.Chains(nil), len(spec.Operators), "%s job %s: one task per operator", l.Slug, name)
		}
	}
	assert.Greater(t, jobs, len(c.Lessons), "the lessons have variants too")
}
