// Package web is StateLab's web app: the HTTP server, the templ pages, and
// the WebSocket protocol that streams a running job to the browser's live
// views and carries the learner's commands back (docs/protocol.md).
//
// Main types:
//
//   - Server (New, Handler, Serve, Close): routes, security headers, the
//     session table with its cap and idle reaper, and the hub.
//   - Engine: what a session needs from a running job — Snapshot,
//     Subscribe, Apply a command, Step/Pause/Resume/SetSpeed, Inspect, Close.
//     NewEngine adapts the engine package's drivers; tests use doubles.
//     An Engine that is also a DriverSwitcher can hand its running job
//     between teaching mode (Stepper) and full speed (Live).
//   - Session: one job and its viewers. Its pump goroutine is the only
//     reader of the engine's events; it coalesces them into at most one
//     "events" frame per FrameInterval (20 per second by default) and
//     sends a fresh "snapshot" after structural changes (restore, rescale,
//     TaskManager lost), after dropped events, and once a second while the
//     job moves.
//   - hub: the one goroutine that owns every connection. It alone sends on
//     and closes a connection's send channel; a connection whose buffer is
//     full is dropped, never waited for. Each connection has one writer
//     goroutine (the only writer of its socket) and one reader (the HTTP
//     handler's goroutine), which parses commands and runs them.
//   - JobTemplate, SandboxSettings: the sandbox's jobs and their settings.
//   - Lesson sessions (lessons.go): a lesson's job on the Stepper, played
//     to a step with lessons.Lesson.PlayTo, followed by a lessons.Tracker
//     per step; "lesson" messages carry the ticks, lesson-do performs a
//     step's actions, lesson-replay goes back. Config.Lessons is the course
//     (default lessons.Default); lessons_pages.go serves /lessons,
//     /lessons/{slug} and /glossary.
//   - The attach page (attach.go, AttachConfig): one shared attach.Poller
//     per JobManager address, read by the page over JSON; and the
//     Performance page (perf.go, PerfConfig): the committed bench results
//     (package docs) and a background quick bench, one run at a time.
//   - The static site (site.go, site_write.go; docs/static-site.md):
//     SitePages renders every page for `statelab site`, WriteSite writes
//     them with the assets and the WebAssembly module (cmd/statelab-wasm),
//     which runs this package's Server inside the page. perf_js.go stands
//     in for the Performance page, which needs a server.
//
// Contract of a connection (docs/protocol.md has the messages):
//
//  1. GET /ws?template=ID[&settings] starts a session, /ws?session=ID joins
//     one (/ws?lesson=SLUG[&step=N] starts a lesson's). The Origin must be the
//     server's own or one allowed with Config.AllowOrigins.
//  2. The first message is a snapshot; every later one is an events batch,
//     a fresh snapshot, or the ack / error of one of this client's commands.
//  3. A client sends {"type":"command","id":…,"name":…,"args":{…}}; each is
//     answered once, in order. A bad message gets an error reply and the
//     connection and session carry on; a message above ReadLimit closes the
//     connection (status 1009).
//  4. A client that cannot keep up is closed with status 1008; it may
//     reconnect with ?session=ID and start from a new snapshot.
//
// Classrooms, time travel and sharing (classroom.go, timetravel.go,
// share.go; docs/protocol.md has the contract):
//
//  1. POST /api/classrooms starts a classroom's session and returns its
//     join code and presenter token; /ws?classroom=CODE&token=T controls
//     it, /ws?classroom=CODE follows it (Role: control commands refused
//     with "forbidden"; fork allowed).
//  2. fork copies the running job (engine.Fork) into a new session, in
//     either mode: the present, the step being looked at, or a step of a
//     teaching-mode run. Forks have their own cap (Config.MaxForks) and a
//     shorter idle timeout (forks.go).
//  3. A teaching-mode run is replayable: spec + seed + command log give the
//     same run, event for event. While it plays the session keeps images
//     (forks of its Stepper every imageEvery steps, images.go); seek shows
//     step N in a fork of the nearest image at or before N stepped on to N,
//     while the present waits. A scenario (template and settings, or lesson
//     and job; seed, log, step) and its share link replay it from step 0
//     anywhere; the event log export replays it too.
//  4. A run that went to the Live driver has no steps to go back to: seek
//     and sharing refuse it and say why; a fork of it is a teaching-mode run
//     whose own timeline starts at the fork (it seeks, it does not share).
//
// Package direction: web imports engine, rescale, static, and for those two
// pages attach, bench and docs, never the reverse; cmd/statelab wires it up
// (statelab serve).
package web
