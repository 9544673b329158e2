// Package lessons is StateLab's course: executable lessons on Flink state,
// checkpoints and rescaling (the catalogue says how many), written in English
// and Chinese, and the machinery that keeps them honest.
//
// A lesson is a folder under content/ (embedded into the binary): the texts
// lesson.en.md and lesson.zh.md, and scenario.yaml with the job, the seed
// and the steps. Each step has protocol commands to perform (Action) and
// predicates that must hold when it is done (Check, from a catalogue of
// named predicates judged on engine Snapshots). docs/lessons.md is the
// authoring guide.
//
// Main types: Catalog (every lesson and the glossary; Default loads the
// embedded ones), Lesson, Step, Action, Check, Observation (what a check
// judges), Tracker (one step followed live), Failure (which lesson, step and
// predicate failed).
//
// Loading lints everything, so a Catalog never holds a lesson with a missing
// translation, a step without a check, an unknown predicate or command, or
// arguments the protocol or the job would refuse.
//
// Instructors' lessons live outside the binary: LoadDir reads a folder of
// them with the same lint (every Problem carries its file and line),
// Catalog.With adds them to the course, Scaffold writes a new one that
// passes as generated, and Lesson.RunStrict plays each acting step again
// without its actions, failing a check that already holds before its step.
// PredicateReference renders the predicate catalogue (docs/predicates.md).
//
// A step may predict (Prediction): a question asked before the action, whose
// answer is computed with Flink's rules (package rescale), never written by
// hand; View puts its card at the top of the step's BodyHTML.
//
// Contract for a viewer (the web) that runs a lesson on an engine:
//
//  1. Get the lesson from Default(). Start its engine with Lesson.Job("main")
//     and engine.NewStepper, or with Lesson.PlayTo(step) to open the lesson
//     at a step (deep links, "replay this step"); PlayTo replays the earlier
//     steps headlessly, so the engine is exactly where the lesson expects.
//  2. At the start of step i — before its actions — take a Snapshot and
//     create NewTracker(step, snapshot).
//  3. Perform the step's actions when the learner does them or asks "do it
//     for me" (send each Action as a protocol command; wait until every
//     subtask is RUNNING first, as the headless runner does). A reset
//     action names a job variant: start a new engine with Lesson.Job(name)
//     and create a new Tracker from its first snapshot.
//     When the learner performs one of the step's actions again (a second
//     click, even one the engine refuses), call Tracker.Restart with the
//     snapshot of that moment: the step is judged from each of its
//     actions, so a repeated click never moves "this step" past what the
//     first one caused.
//  4. Feed every engine event to Tracker.Observe, and after each batch call
//     Tracker.Check with a fresh Snapshot (and the engine as StateReader).
//     Judge again now and then even without events (a subscriber that fell
//     behind misses some; a run that went quiet sends none). When
//     Result.Done, show the tick and move on to step i+1 (go to 2).
//
// Lesson.Run does the same headlessly on the Stepper, and `statelab lessons
// check` runs it for every lesson in CI: a lesson whose text and engine
// drift apart fails the build.
package lessons
