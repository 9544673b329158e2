package pages

// ClassroomStart is the classroom start page: the jobs a presenter may run.
type ClassroomStart struct {
	Templates []TemplateCard
}

// ClassroomView is a classroom's page, for its presenter or a follower.
type ClassroomView struct {
	Code    string
	JoinURL string
	QRURL   string
	// Presenter: the holder of the token (controls, clicker keys); else a
	// follower (read-only, may fork).
	Presenter bool
	// LoopbackOnly: the join URL names a loopback address, which students'
	// devices cannot reach.
	LoopbackOnly bool
	Workspace    Workspace
}
