package pages

// ServerOnlyText is what a server-only page of the static site says.
type ServerOnlyText struct {
	Feature   string // classroom, attach, performance
	Title     string
	Why       string // why this needs a server
	How       string // how to get one
	Open      string // the link's label
	ServerURL string // the page on a local statelab serve
}
