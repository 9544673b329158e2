package bench

// PeersReport is what the peers module (bench/peers, its own go.mod) prints
// with --json: records/s of the same keyed count on other Go stream
// processors, StateLab's engine and the bare pipeline, medians of
// interleaved rounds in one process. statelab bench --peers FILE merges it.
type PeersReport struct {
	Schema   int        `json:"schema"`
	Workload Workload   `json:"workload"`
	Rounds   int        `json:"rounds"`
	Machine  Machine    `json:"machine"`
	Systems  []PeerRun  `json:"systems"`
	Ratios   []PeerPair `json:"ratios"`
	Notes    []string   `json:"notes,omitempty"`
}

// PeerRun is one system's keyed count.
type PeerRun struct {
	Name string `json:"name"`
	// What says what runs: library, version, state storage, parallelism.
	What string `json:"what"`
	// RecordsPerSecond is the median over rounds.
	RecordsPerSecond float64   `json:"recordsPerSecond"`
	Samples          []float64 `json:"samples"`
	// Verified is true when the system's counts equalled the ground truth
	// before it was timed.
	Verified bool `json:"verified"`
}

// PeerPair is StateLab's ratio to one peer (StateLab's records/s over the
// peer's).
type PeerPair struct {
	StateLab string  `json:"statelab"`
	Peer     string  `json:"peer"`
	Ratio    float64 `json:"ratio"`
	Target   *Target `json:"target,omitempty"`
}
