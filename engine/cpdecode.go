package engine

import (
	"encoding/json"
	"fmt"

	"github.com/statelab/statelab/state"
)

// ErrCorruptCheckpoint wraps checkpointed operator state that does not
// decode. A checkpoint the engine wrote always decodes; one that does not
// was damaged in storage, and — as a corrupt file fails Flink's restore —
// it is an error, never skipped.
var ErrCorruptCheckpoint = fmt.Errorf("engine: corrupt checkpoint")

// decodeElements decodes every element of operator state name in the
// operator state os of checkpoint meta, calling fn with each in order. An
// element that is not valid JSON of T fails with an error naming the
// checkpoint, the operator, the subtask, the state and the element.
func decodeElements[T any](meta *state.CheckpointMetadata, os *state.OperatorState, name string, fn func(T)) error {
	for _, st := range os.Subtasks {
		if st.Operator == nil {
			continue
		}
		for _, ns := range st.Operator.States {
			if ns.Name != name {
				continue
			}
			for i, e := range ns.Elements {
				var v T
				if err := json.Unmarshal(e, &v); err != nil {
					what := "checkpoint"
					if meta.Savepoint {
						what = "savepoint"
					}
					return fmt.Errorf("%w: %s %d, operator %s, subtask %d, operator state %q, element %d does not decode (%v); the checkpoint was damaged after it was written — restore an older one with the restore command",
						ErrCorruptCheckpoint, what, meta.CheckpointID, os.OperatorID, st.Subtask, name, i, err)
				}
				fn(v)
			}
		}
	}
	return nil
}
