package lessons

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEmbeddedCatalog(t *testing.T) {
	c, err := Default()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(c.Lessons), 12)
	for i, l := range c.Lessons {
		assert.Equal(t, i+1, l.Number, "lessons are numbered 1, 2, 3 …")
		for _, lang := range Langs {
			require.Contains(t, l.Text, lang, l.Slug)
			for _, st := range l.Steps {
				require.Contains(t, st.Text, lang, "%s step %s", l.Slug, st.ID)
				assert.NotEmpty(t, st.Text[lang].HintHTML, "%s step %s", l.Slug, st.ID)
			}
		}
		// Written Chinese uses Flink's terms, never the machine-translation
		// traps for "state" and "task".
		for _, st := range l.Steps {
			zh := st.Text[ZH].Body + st.Text[ZH].Hint
			assert.NotContains(t, zh, "国家", "%s step %s", l.Slug, st.ID)
			assert.NotContains(t, zh, "义务", "%s step %s", l.Slug, st.ID)
		}
		assert.NotContains(t, l.Text[ZH].Intro, "国家", l.Slug)
	}
	prev, next := c.Neighbours(c.Lessons[0].Slug)
	assert.Nil(t, prev)
	assert.Equal(t, c.Lessons[1], next)
	assert.True(t, strings.Contains(c.Glossary[EN].HTML, "EmbeddedRocksDBStateBackend"))
	assert.True(t, strings.Contains(c.Glossary[ZH].HTML, "键组"))
}

// Every embedded lesson plays through on the engine: the check CI runs.
func TestEmbeddedLessonsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("plays every lesson on the engine")
	}
	c, err := Default()
	require.NoError(t, err)
	for _, l := range c.Lessons {
		t.Run(l.Slug, func(t *testing.T) {
			rep, err := l.Run(context.Background(), RunOptions{Dir: t.TempDir()})
			require.NoError(t, err)
			assert.Len(t, rep.Steps, len(l.Steps))
		})
	}
}

func TestLessonView(t *testing.T) {
	c, err := Default()
	require.NoError(t, err)
	l, ok := c.Lesson("05-failure-and-recovery")
	require.True(t, ok)
	v := l.View(ZH, c)
	assert.Equal(t, "故障与恢复", v.Title)
	assert.Equal(t, "04-checkpoints-and-barriers", v.Prev)
	assert.Equal(t, "06-rescaling-operator-state", v.Next)
	require.Len(t, v.Steps, 6)
	kill := v.Steps[1]
	assert.Equal(t, "step-2", kill.Anchor)
	assert.Equal(t, []CommandView{{Name: "crash-taskmanager", Args: []byte(`{"taskManager":"tm-1"}`)}}, kill.Actions)
	assert.Equal(t, "这一步中，TaskManager tm-1 丢失了：它上面的子任务都失败了，本地磁盘也被清空。", kill.Checks[0])
	assert.Equal(t, "作业在这一步中至少重启了 1 次。", kill.Checks[1])
	assert.Equal(t, "no-checkpoints", v.Steps[3].Job, "the step that resets names its job")
	assert.Equal(t, "启动作业 clickcount-no-checkpoints", v.Steps[3].JobLabel, "and labels the learner's button by the job's name")
	assert.Empty(t, v.Steps[1].JobLabel)
	seven, _ := c.Lesson("07-why-not-hash-mod")
	assert.Equal(t, "Start the job wordcount again", seven.View(EN, c).Steps[2].JobLabel, "a reset to the main job starts it again")
	assert.Equal(t, "Failure and recovery", l.View("fr", nil).Title, "an unknown language falls back to English")
}
