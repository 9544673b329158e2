package savepoint

// Report is the summary `statelab savepoint inspect --json` prints and the
// /savepoint page shows. Its first fields are a fixed contract (issue 20):
//
//	{"version":V,"checkpointId":N,"operators":[{"id":"<32 hex>","name":"…","uid":"…",
//	 "parallelism":P,"maxParallelism":M,"subtasks":[{"subtask":i,
//	 "operatorState":[{"name":"…","mode":"SPLIT_DISTRIBUTE|UNION|BROADCAST","elements":K}],
//	 "keyedState":[{"start":a,"end":b,"bytes":n}]}]}]}
//
// Fields after those are extra and may grow.
type Report struct {
	Version      int              `json:"version"`
	CheckpointID int64            `json:"checkpointId"`
	Operators    []ReportOperator `json:"operators"`

	Size            int           `json:"size"`
	MasterStates    []MasterState `json:"masterStates"`
	Properties      *Properties   `json:"properties,omitempty"`
	PropertiesError string        `json:"propertiesError,omitempty"`
	// PropertiesErrorReason is PropertiesError's code, for the page.
	PropertiesErrorReason *Reason  `json:"propertiesErrorReason,omitempty"`
	LoadedFiles           int      `json:"loadedFiles,omitempty"`
	FileProblems          []string `json:"fileProblems,omitempty"`
}

// ReportOperator is one operator of a Report.
type ReportOperator struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	UID            string          `json:"uid"`
	Parallelism    int             `json:"parallelism"`
	MaxParallelism int             `json:"maxParallelism"`
	Subtasks       []ReportSubtask `json:"subtasks"`

	FullyFinished bool `json:"fullyFinished,omitempty"`
	// CoordinatorBytes is the operator coordinator's state size (0: none).
	CoordinatorBytes int64             `json:"coordinatorBytes"`
	Coordinator      *CoordinatorState `json:"coordinator,omitempty"`
	// StateBytes sums every handle's size over all subtasks.
	StateBytes int64 `json:"stateBytes"`
}

// ReportSubtask is one subtask of an operator in a Report.
type ReportSubtask struct {
	Subtask       int           `json:"subtask"`
	OperatorState []ReportList  `json:"operatorState"`
	KeyedState    []ReportKeyed `json:"keyedState"`

	Finished         bool          `json:"finished,omitempty"`
	RawOperatorState []ReportList  `json:"rawOperatorState,omitempty"`
	RawKeyedState    []ReportKeyed `json:"rawKeyedState,omitempty"`
	// OperatorStateHandle says where the managed operator state lives.
	OperatorStateHandle *StreamHandle `json:"operatorStateHandle,omitempty"`
	InputChannels       int           `json:"inputChannelHandles,omitempty"`
	OutputChannels      int           `json:"resultSubpartitionHandles,omitempty"`
	ChannelBytes        int64         `json:"channelBytes,omitempty"`
	RefCheckpointID     *int64        `json:"refCheckpointId,omitempty"`
}

// ReportList is one named operator state (a list, or a broadcast map).
type ReportList struct {
	Name     string `json:"name"`
	Mode     string `json:"mode"`
	Elements int    `json:"elements"`

	Bytes      int64     `json:"bytes"`
	Serializer string    `json:"serializer,omitempty"`
	Values     []Element `json:"values,omitempty"`
	NotDecoded string    `json:"notDecoded,omitempty"`
	// NotDecodedReason is NotDecoded as a code the page translates.
	NotDecodedReason *Reason `json:"notDecodedReason,omitempty"`
}

// ReportKeyed is one keyed state handle: its key-group range and size.
type ReportKeyed struct {
	Start int   `json:"start"`
	End   int   `json:"end"`
	Bytes int64 `json:"bytes"`

	Kind string `json:"kind"`
	// KeyGroupBytes: bytes per key group from Start to End, when the handle
	// records per-key-group offsets.
	KeyGroupBytes []int64 `json:"keyGroupBytes,omitempty"`
	// Where the bytes are: "inline", a path, or the number of files.
	Location     string `json:"location"`
	SharedFiles  int    `json:"sharedFiles,omitempty"`
	PrivateFiles int    `json:"privateFiles,omitempty"`
	// Values are the decoded entries of an inline full snapshot
	// (DecodeKeyedState); absent when the bytes are in files.
	Values *KeyedValues `json:"values,omitempty"`
}

// NewReport summarises m.
func NewReport(m *Metadata) *Report {
	rep := &Report{Version: m.Version, CheckpointID: m.CheckpointID, Operators: []ReportOperator{},
		Size: m.Size, MasterStates: m.MasterStates, Properties: m.Properties, PropertiesError: m.PropertiesError, PropertiesErrorReason: m.PropertiesErrorReason,
		LoadedFiles: m.LoadedFiles, FileProblems: m.FileProblems}
	for _, op := range m.Operators {
		ro := ReportOperator{ID: op.ID, Name: op.Name, UID: op.UID, Parallelism: op.Parallelism,
			MaxParallelism: op.MaxParallelism, Subtasks: []ReportSubtask{}, FullyFinished: op.FullyFinished}
		if op.Coordinator != nil {
			ro.CoordinatorBytes = op.Coordinator.Size
			if c, ok := DecodeCoordinator(op.Coordinator); ok {
				ro.Coordinator = &c
			}
		}
		for _, st := range op.Subtasks {
			rs := ReportSubtask{Subtask: st.Index, Finished: st.Finished, OperatorState: lists(st.ManagedOperatorState),
				KeyedState: keyed(st.ManagedKeyedState, op.MaxParallelism), RawKeyedState: keyed(st.RawKeyedState, 0),
				InputChannels: len(st.InputChannelState), OutputChannels: len(st.ResultSubpartitionState),
				RefCheckpointID: st.RefCheckpointID}
			if st.RawOperatorState != nil {
				rs.RawOperatorState = lists(st.RawOperatorState)
			}
			if len(rs.RawKeyedState) == 0 {
				rs.RawKeyedState = nil
			}
			if h := st.ManagedOperatorState; h != nil && h.Delegate != nil {
				d := *h.Delegate
				rs.OperatorStateHandle = &d
				ro.StateBytes += d.Size
			}
			if h := st.RawOperatorState; h != nil {
				ro.StateBytes += h.Delegate.size()
			}
			ro.StateBytes += st.ManagedKeyedState.Size() + st.RawKeyedState.Size()
			for _, c := range append(append([]ChannelHandle{}, st.InputChannelState...), st.ResultSubpartitionState...) {
				rs.ChannelBytes += c.Size
			}
			ro.StateBytes += rs.ChannelBytes
			ro.Subtasks = append(ro.Subtasks, rs)
		}
		rep.Operators = append(rep.Operators, ro)
	}
	return rep
}

func lists(h *OperatorStateHandle) []ReportList {
	out := []ReportList{}
	if h == nil {
		return out
	}
	for _, sv := range DecodeOperatorState(h) {
		l := ReportList{Name: sv.Name, Mode: sv.Mode, Elements: len(sv.Elements), Serializer: sv.Serializer,
			NotDecoded: sv.NotDecoded, NotDecodedReason: sv.NotDecodedReason}
		for _, e := range sv.Elements {
			l.Bytes += e.Bytes
		}
		if sv.NotDecoded == "" {
			l.Values = sv.Elements
		}
		out = append(out, l)
	}
	return out
}

// keyed summarises a keyed handle; with maxParallelism > 0 it also decodes
// an inline full snapshot's entries (raw keyed state is the user's own bytes).
func keyed(h *KeyedHandle, maxParallelism int) []ReportKeyed {
	out := []ReportKeyed{}
	if h == nil {
		return out
	}
	k := ReportKeyed{Start: h.Range.Start, End: h.Range.End, Bytes: h.Size(), Kind: h.Kind, KeyGroupBytes: h.KeyGroupBytes()}
	switch {
	case h.Delegate.HasData():
		k.Location = "inline"
		if h.Delegate.Loaded {
			k.Location = h.Delegate.Path
		}
		if maxParallelism > 0 && len(h.Offsets) > 0 {
			k.Values = DecodeKeyedState(h, maxParallelism)
		}
	case h.Delegate != nil:
		k.Location = h.Delegate.Path
	case h.Kind == KindIncremental:
		k.SharedFiles, k.PrivateFiles = len(h.SharedFiles), len(h.PrivateFiles)
		k.Location = "files"
	default:
		k.Location = "changelog"
	}
	return append(out, k)
}
