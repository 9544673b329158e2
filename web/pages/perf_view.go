package pages

// PerfPage is the Performance page: the committed results of
// `statelab bench`, the latest quick run on this server, and the run button.
type PerfPage struct {
	Committed *PerfResults // nil when the build embeds none
	Latest    *PerfResults // nil before the first finished run
	Run       PerfRun
}

// PerfRun is the state of the page's quick bench when the page was drawn;
// /static/js/perf.js follows it from there.
type PerfRun struct {
	State          string // idle, running, done, failed, cancelled
	CanRun         bool
	Disabled       bool
	Run            int
	TimeoutMinutes int
}

// PerfResults is one bench report as a table and charts.
type PerfResults struct {
	Which    string // committed, latest
	Meta     string // mode, seed, rounds, machine, duration, start
	Targets  string // "targets met: 10 of 25"
	Rows     []PerfRow
	Charts   []PerfChart
	Notes    []string
	JSONHref string
}

// PerfRow is one case beside its baseline.
type PerfRow struct {
	Group, Case, Value, Baseline, BaselineValue, Ratio, Target string
	Met, Missed                                                bool
}

// PerfChart is one SVG chart of a report.
type PerfChart struct {
	Src     string
	Caption string
	Wide    bool // the ratio overview takes the whole row
}
