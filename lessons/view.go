package lessons

import (
	"encoding/json"
	"strconv"
)

// LessonView is a lesson in one language as plain data, for a page or a
// script: HTML already rendered (and escaped), actions as protocol
// commands, checks as sentences.
type LessonView struct {
	Slug      string     `json:"slug"`
	Number    int        `json:"number"`
	Minutes   int        `json:"minutes"`
	Lang      Lang       `json:"lang"`
	Title     string     `json:"title"`
	Summary   string     `json:"summary"`
	IntroHTML string     `json:"introHtml"`
	EndTitle  string     `json:"endTitle,omitempty"`
	EndHTML   string     `json:"endHtml,omitempty"`
	Steps     []StepView `json:"steps"`
	Prev      string     `json:"prev,omitempty"` // slug of the previous lesson
	Next      string     `json:"next,omitempty"`
	// Capstone: the steps are goals, with no "do it for me"; hint k of a
	// step unlocks k × HintEvery seconds after the step became current.
	Capstone  bool `json:"capstone,omitempty"`
	HintEvery int  `json:"hintEvery,omitempty"`
}

// StepView is one step of a LessonView. Anchor is the deep link's fragment
// ("step-3" for the third step).
type StepView struct {
	ID        string        `json:"id"`
	Number    int           `json:"number"`
	Anchor    string        `json:"anchor"`
	Title     string        `json:"title"`
	TitleHTML string        `json:"titleHtml"`
	BodyHTML  string        `json:"bodyHtml"`
	HintHTML  string        `json:"hintHtml"`
	HintsHTML []string      `json:"hintsHtml"`
	Actions   []CommandView `json:"actions"`
	Checks    []string      `json:"checks"` // what is checked, one sentence each
	Within    int           `json:"within"`
	Job       string        `json:"job,omitempty"` // the job a reset in this step switches to
	// JobLabel is the text of the button that starts Job ("Start the job
	// wordcount-at-least-once"): the learner's own control for the reset,
	// beside "do it for me".
	JobLabel string `json:"jobLabel,omitempty"`
	// Predict is the step's prediction, when it has one. BodyHTML then
	// begins with the prediction card (predictHTML), so a page that shows
	// BodyHTML shows the card; lesson.js wires it.
	Predict *PredictView `json:"predict,omitempty"`
}

// PredictView is a step's prediction: the choices, the engine's answer
// (computed with Flink's rules), the question and the why.
type PredictView struct {
	Choices      []string `json:"choices,omitempty"` // nil: a number from 0 to Max
	Max          int      `json:"max,omitempty"`
	Answer       string   `json:"answer"`
	QuestionHTML string   `json:"questionHtml"`
	WhyHTML      string   `json:"whyHtml"`
}

// CommandView is an action as the client sends it: {"type":"command",
// "name":…, "args":…} with an id of its own.
type CommandView struct {
	Name          string          `json:"name"`
	Args          json.RawMessage `json:"args"`
	ExpectRefused bool            `json:"expectRefused,omitempty"`
}

// View returns the lesson in lang (English when lang is unknown); c, when
// given, fills in the previous and next lessons.
func (l *Lesson) View(lang Lang, c *Catalog) LessonView {
	t, ok := l.Text[lang]
	if !ok {
		lang, t = EN, l.Text[EN]
	}
	v := LessonView{Slug: l.Slug, Number: l.Number, Minutes: l.Minutes, Lang: lang, Title: t.Title, Summary: t.Summary,
		IntroHTML: t.IntroHTML, EndTitle: t.EndTitle, EndHTML: t.EndHTML, Steps: []StepView{}}
	if l.Capstone != nil {
		v.Capstone, v.HintEvery = true, l.Capstone.HintEvery
	}
	if c != nil {
		prev, next := c.Neighbours(l.Slug)
		if prev != nil {
			v.Prev = prev.Slug
		}
		if next != nil {
			v.Next = next.Slug
		}
	}
	for _, st := range l.Steps {
		tx := st.Text[lang]
		sv := StepView{ID: st.ID, Number: st.Index + 1, Anchor: StepAnchor(st.Index), Title: tx.Title, TitleHTML: tx.TitleHTML,
			BodyHTML: tx.BodyHTML, HintHTML: tx.HintHTML, HintsHTML: tx.HintsHTML, Actions: []CommandView{}, Checks: []string{}, Within: st.Within}
		if st.Predict != nil {
			sv.Predict = &PredictView{Choices: st.Predict.Choices, Max: st.Predict.Max, Answer: st.Predict.Answer, QuestionHTML: tx.QuestionHTML, WhyHTML: tx.WhyHTML}
			sv.BodyHTML = predictHTML(lang, st.ID, st.Predict, tx.QuestionHTML, tx.WhyHTML) + sv.BodyHTML
		}
		for _, a := range st.Actions {
			sv.Actions = append(sv.Actions, CommandView{Name: a.Name, Args: a.MarshalArgs(), ExpectRefused: a.ExpectRefused})
			if a.Name == cmdReset {
				sv.Job = MainJob
				if j, ok := a.Args["job"].(string); ok {
					sv.Job = j
				}
				sv.JobLabel = l.jobLabel(lang, sv.Job)
			}
		}
		for _, c := range st.Checks {
			sv.Checks = append(sv.Checks, c.Describe(lang))
		}
		v.Steps = append(v.Steps, sv)
	}
	return v
}

// jobLabel is the text of the button that starts one of the lesson's jobs.
func (l *Lesson) jobLabel(lang Lang, job string) string {
	name := job
	if s, err := l.Job(job); err == nil && s.Name != "" {
		name = s.Name
	}
	again := job == MainJob
	switch {
	case lang == ZH && again:
		return "重新启动作业 " + name
	case lang == ZH:
		return "启动作业 " + name
	case again:
		return "Start the job " + name + " again"
	}
	return "Start the job " + name
}

// StepAnchor is the fragment of step i's deep link: /lessons/<slug>#step-<i+1>.
func StepAnchor(i int) string { return "step-" + strconv.Itoa(i+1) }
