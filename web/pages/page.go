// Package pages holds StateLab's HTML pages as templ components. The
// components render view data the web package prepares; they call no engine
// and read no request. Generated *_templ.go files are committed; regenerate
// them with `go tool templ generate` after editing a .templ file.
//
// Every page is Layout around a body. Pages never carry inline script or
// style (the CSP refuses both): behaviour comes from the ES module named in
// Page.Script, which reads its settings from data-* attributes.
package pages

// Page is what every page needs: language, translator, title, navigation.
type Page struct {
	Lang  string
	T     func(key string) string
	Title string
	// Active is the navigation entry to highlight: home, lessons, sandbox, classroom.
	Active string
	// LangLinks are the language switch's targets, one per language.
	LangLinks []LangLink
	// Script is the ES module the page runs ("" for none).
	Script string
	// Wide pages (the live workspace) use the whole window.
	Wide bool
	// MaxParallelism is the server's bound on an operator's parallelism
	// (statelab serve --max-parallelism): the parallelism field on an
	// operator's head offers no more. 0: no bound but the max parallelism.
	MaxParallelism int
}

// LangLink is one entry of the language switch.
type LangLink struct {
	Code    string
	Name    string
	Href    string
	Current bool
}

// TemplateCard is one job template in the sandbox chooser.
type TemplateCard struct {
	ID          string
	Title       string
	Description string
	// Operators whose parallelism the form sets, with their defaults.
	Parallelism []OperatorSetting
	Checked     bool
	Diagram     []string // operator chain, e.g. source → tokenizer → count → sink
}

// OperatorSetting is one parallelism field.
type OperatorSetting struct {
	Operator string
	Value    int
}

// SandboxForm is the chooser's shared settings.
type SandboxForm struct {
	Templates    []TemplateCard
	Backend      string
	Interval     string
	TaskManagers int
	Slots        int
	Seed         int64
	Keys         int
	Driver       string
	Sink         string
	// KeyedTemplates and TimerTemplates list, space-separated, the
	// templates whose jobs keep keyed state (the state TTL fields) and
	// have an alerts operator (the time domain field).
	KeyedTemplates string
	TimerTemplates string
}

// Workspace is the live view of one session.
type Workspace struct {
	// WSQuery is the query string the page's WebSocket opens /ws with
	// (template=… or session=…).
	WSQuery string
	// Compact hides the panels a lesson does not need yet.
	Compact bool
}
