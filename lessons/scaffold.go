package lessons

import (
	"fmt"
	"strings"
)

// Scaffold returns the files of a new lesson named slug (NN-words): its
// scenario and both translations, keyed by their path inside the lesson
// folder. The lesson is complete as generated — it loads, lints and passes
// RunStrict — so an instructor starts from a lesson that works and changes
// one thing at a time (docs/lessons.md, docs/predicates.md).
func Scaffold(slug string) (map[string]string, error) {
	if !reSlug.MatchString(slug) {
		return nil, fmt.Errorf("lesson name %q: a lesson folder is named NN-words, in lower case, e.g. 13-my-lesson (the number orders the course; the built-in lessons use 01 to 12)", slug)
	}
	words := strings.Split(slug, "-")[1:]
	title := strings.ToUpper(words[0][:1]) + words[0][1:]
	if len(words) > 1 {
		title += " " + strings.Join(words[1:], " ")
	}
	return map[string]string{
		"scenario.yaml": strings.ReplaceAll(scaffoldScenario, "JOBNAME", slug),
		"lesson.en.md":  strings.ReplaceAll(scaffoldEN, "TITLE", title),
		"lesson.zh.md":  strings.ReplaceAll(scaffoldZH, "TITLE", title),
	}, nil
}

const scaffoldScenario = `# The machine side of the lesson: the job, the seed, the steps.
# Words live in lesson.en.md and lesson.zh.md; this file holds no language.
# Schema: docs/lessons.md. Every check predicate: docs/predicates.md.
# Check it with: statelab lessons check --dir <this folder>
minutes: 5                # reading + doing time, 5..10
seed: 1                   # the same seed gives the same run
job:
  name: JOBNAME
  backend: memory         # memory | fs | pebble
  operators:
    - {id: source, kind: source, parallelism: 1, options: {partitions: 1, generator: none}}
    - {id: tokenizer, kind: tokenizer, parallelism: 1}
    - {id: count, kind: count, parallelism: 1}
    - {id: sink, kind: sink, parallelism: 1, options: {semantics: at-least-once}}
  edges:
    - {from: source, to: tokenizer, partitioner: forward}
    - {from: tokenizer, to: count, partitioner: hash}
    - {from: count, to: sink, partitioner: forward}
  checkpointing: {interval: 0s}
steps:
  - id: type-a-line       # the Markdown's section {step=type-a-line}
    actions:              # what "do it for me" sends; the learner does it with a visible control
      - {name: inject, args: {text: "hello statelab hello"}}
    check:                # must hold because of the action, and only then
      - keyed-state: {operator: count, key: hello, equals: 2}
`

const scaffoldEN = `---
title: TITLE
summary: One line for the lesson list — what the learner does and sees.
---

Say what this lesson is about and why it matters, in two or three sentences. The job on the right counts
words: a source, a tokenizer, and a keyed ` + "`count`" + ` operator that keeps one number per word in its keyed
state.

## Type a line {step=type-a-line}

Type ` + "`hello statelab hello`" + ` into the text box and press Enter. The ` + "`count`" + ` operator keeps a count per
word in keyed state; open the subtask ` + "`count#0`" + ` and see ` + "`hello`" + ` counted **2** times.

> [!hint]
> The text box is in the toolbar above the job graph. Click the ` + "`count#0`" + ` box to open its state.

## What you learned {end}

Sum the lesson up in one or two sentences, and say what the next lesson shows.
`

const scaffoldZH = `---
title: TITLE
summary: 课程列表里的一行：学习者做什么、看到什么。
---

用两三句话说明这一课讲什么、为什么重要。右边的作业统计单词：一个 source、一个 tokenizer，以及一个按键分区的
` + "`count`" + ` 算子，它在键控状态中为每个单词保存一个计数。

## 输入一行文字 {step=type-a-line}

在文本框中输入 ` + "`hello statelab hello`" + ` 并按回车。` + "`count`" + ` 算子在键控状态中为每个单词保存计数；打开子任务
` + "`count#0`" + `，可以看到 ` + "`hello`" + ` 被计了 **2** 次。

> [!hint]
> 文本框在作业图上方的工具栏里。点击 ` + "`count#0`" + ` 方框即可查看它的状态。

## 学到了什么 {end}

用一两句话总结这一课，并说明下一课讲什么。
`
