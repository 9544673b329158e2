package lessons

import (
	"strings"
	"testing"
	"testing/fstest"
)

// A small, valid lesson the lint and runner tests start from and then
// break one way at a time.
const fixtureScenario = `minutes: 5
seed: 1
job:
  name: tiny
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
variants:
  other:
    name: tiny-other
    operators:
      - {id: source, kind: source, parallelism: 1, options: {partitions: 1, generator: none}}
      - {id: tokenizer, kind: tokenizer, parallelism: 1}
      - {id: count, kind: count, parallelism: 1}
      - {id: sink, kind: sink, parallelism: 1, options: {semantics: at-least-once}}
    edges:
      - {from: source, to: tokenizer, partitioner: forward}
      - {from: tokenizer, to: count, partitioner: hash}
      - {from: count, to: sink, partitioner: forward}
steps:
  - id: type
    actions:
      - {name: inject, args: {text: "a b a"}}
    check:
      - keyed-state: {operator: count, key: a, equals: 2}
    within: 500
  - id: save
    actions:
      - {name: trigger-checkpoint}
    check:
      - checkpoint-completed: {new: 1}
    within: 500
`

const fixtureEN = `---
title: Tiny
summary: A tiny lesson.
---

Intro text.

## Type a line {step=type}

Type ` + "`a b a`" + `; the count of a becomes 2.

> [!hint]
> The box is under the source.

## Take a checkpoint {step=save}

Trigger a checkpoint.

> [!hint]
> The button is in the checkpoint panel.

## Done {end}

Bye.
`

const fixtureZH = `---
title: 小课
summary: 一个小课程。
---

引言。

## 输入一行 {step=type}

输入 ` + "`a b a`" + `；a 的计数变成 2。

> [!hint]
> 输入框在 source 下方。

## 做一次检查点 {step=save}

触发一次检查点。

> [!hint]
> 按钮在检查点面板里。
`

const fixtureGlossary = `---
title: Glossary
summary: Words.
---

| a | b |
|---|---|
| state | 状态 |
`

// fixture returns the files of a content folder with one valid lesson.
func fixture() map[string]string {
	return map[string]string{
		"01-tiny/scenario.yaml": fixtureScenario,
		"01-tiny/lesson.en.md":  fixtureEN,
		"01-tiny/lesson.zh.md":  fixtureZH,
		"glossary.en.md":        fixtureGlossary,
		"glossary.zh.md":        fixtureGlossary,
	}
}

func mapFS(files map[string]string) fstest.MapFS {
	m := fstest.MapFS{}
	for k, v := range files {
		m[k] = &fstest.MapFile{Data: []byte(v)}
	}
	return m
}

// replace changes one file of the fixture, failing the test if old is not there.
func replace(t *testing.T, files map[string]string, name, old, new string) {
	t.Helper()
	if !strings.Contains(files[name], old) {
		t.Fatalf("fixture %s does not contain %q", name, old)
	}
	files[name] = strings.Replace(files[name], old, new, 1)
}
