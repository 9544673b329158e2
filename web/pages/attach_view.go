package pages

// AttachForm is the attach page's form: the JobManager's REST address, the
// poll interval, and the max-parallelism fallback for Flink before 1.13,
// prefilled from the page's query so a reading can be bookmarked.
type AttachForm struct {
	Flink          string
	Interval       string
	MaxParallelism string
	// MinInterval and MaxInterval are the bounds the server accepts, shown
	// in the hint.
	MinInterval string
	MaxInterval string
}
