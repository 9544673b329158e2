package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/statelab/statelab/state"
)

// MaxUIDLength bounds an operator's uid, in characters.
const MaxUIDLength = 100

// checkUIDs refuses uids that are too long, hold control characters, or are
// used twice. Flink finds a duplicate uid when it hashes the graph
// (StreamGraphHasherV2.generateNodeHash) and refuses it with the message
// quoted here.
func (s *JobSpec) checkUIDs() error {
	seen := map[string]string{}
	hashes := map[string]string{}
	for _, o := range s.Operators {
		if o.UIDHash != "" {
			if len(o.UIDHash) != 32 || strings.Trim(o.UIDHash, "0123456789abcdef") != "" {
				return specErr("operator %q: uidHash %q must be 32 lowercase hex digits, an operator ID as StateLab shows it", o.ID, o.UIDHash)
			}
			if other, dup := hashes[o.UIDHash]; dup {
				return specErr("operators %q and %q have the same uidHash %q; it must be unique per operator", other, o.ID, o.UIDHash)
			}
			hashes[o.UIDHash] = o.ID
		}
		if o.UID == "" {
			continue
		}
		if utf8.RuneCountInString(o.UID) > MaxUIDLength || strings.TrimSpace(o.UID) != o.UID ||
			strings.ContainsFunc(o.UID, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			return specErr("operator %q: uid %q must be at most %d characters without control characters or surrounding spaces", o.ID, o.UID, MaxUIDLength)
		}
		if other, dup := seen[o.UID]; dup {
			return specErr("operators %q and %q have the same uid %q: Hash collision on user-specified ID. Most likely cause is a non-unique ID. Please check that all IDs specified via `uid(String)` are unique.", other, o.ID, o.UID)
		}
		seen[o.UID] = o.ID
	}
	return nil
}

// OperatorIDs returns every operator's OperatorID (32 hex digits, as Flink
// prints one): the ID its state is filed under in a checkpoint, and the
// only thing a restore matches state by. It follows Flink's
// StreamGraphHasherV2:
//
//   - an operator with a uid gets a hash of the uid alone, so it keeps its
//     ID whatever else changes in the job;
//   - an operator without one gets a hash of its place in the topology: the
//     graph is walked breadth first from the sources (in the order the spec
//     lists them), an operator is hashed once all its inputs are, and its
//     hash covers the number of operators hashed before it, then mixes in
//     each input's hash (hash[j] = hash[j]*37 ^ input[j]). With chaining
//     on, the count is hashed once more for each output edge that chains
//     (JobSpec.chainable), so forming or breaking a chain — chaining on or
//     off, disableChaining, startNewChain — changes the operator's ID and
//     every later one's. Inserting an operator upstream, or removing one,
//     moves every later operator and so changes its ID; its kind and name
//     are not part of it.
//
// Where it differs from Flink: Flink hashes with murmur3_128, StateLab with
// SHA-256 (the first 16 bytes), so the IDs are not Flink's; the rules that
// matter to a user are the same: set a uid on every stateful operator
// before the first savepoint.
func (s *JobSpec) OperatorIDs() map[string]string {
	hashes := map[string][]byte{}
	inputs := map[string][]string{}
	outputs := map[string][]string{}
	for _, e := range s.Edges {
		inputs[e.To] = append(inputs[e.To], e.From)
		outputs[e.From] = append(outputs[e.From], e.To)
	}
	uid := map[string]string{}
	var queue []string
	visited := map[string]bool{}
	for _, o := range s.Operators {
		uid[o.ID] = o.UID
		if len(inputs[o.ID]) == 0 {
			queue = append(queue, o.ID)
			visited[o.ID] = true
		}
	}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		var h []byte
		if u := uid[id]; u != "" {
			sum := sha256.Sum256([]byte(u))
			h = sum[:16]
		} else {
			ready := true
			for _, in := range inputs[id] {
				if hashes[in] == nil {
					ready = false
				}
			}
			if !ready {
				visited[id] = false // visited again once its inputs are hashed
				continue
			}
			// The operator's place, then once more for each operator
			// chained to it (Flink's generateDeterministicHash hashes the
			// same count again per chainable output edge).
			buf := binary.BigEndian.AppendUint32(nil, uint32(len(hashes)))
			for ei, e := range s.Edges {
				if e.From != id {
					continue
				}
				if _, ok := s.Operator(e.To); !ok {
					continue
				}
				if ok, _, _ := s.chainable(ei, nil); ok {
					buf = binary.BigEndian.AppendUint32(buf, uint32(len(hashes)))
				}
			}
			sum := sha256.Sum256(buf)
			h = sum[:16]
			for _, in := range inputs[id] {
				other := hashes[in]
				for j := range h {
					h[j] = h[j]*37 ^ other[j]
				}
			}
		}
		hashes[id] = h
		for _, out := range outputs[id] {
			if !visited[out] {
				visited[out] = true
				queue = append(queue, out)
			}
		}
	}
	out := make(map[string]string, len(hashes))
	for id, h := range hashes {
		out[id] = hex.EncodeToString(h)
	}
	return out
}

// operatorIDLabel names an operator's state for a person: the operator's
// name and its ID, with the uid it came from if any.
func operatorIDLabel(name, uid, id string) string {
	if uid != "" {
		return fmt.Sprintf("%s (uid %q, ID %s)", name, uid, id)
	}
	return fmt.Sprintf("%s (ID %s, generated)", name, id)
}

// operatorIDs is OperatorIDs of the running job's spec.
func (c *core) operatorIDs() map[string]string { return c.spec.OperatorIDs() }

// mapStates matches the operator states of checkpoint meta to spec's
// operators by operator ID, as Flink's Checkpoints.loadAndValidateCheckpoint
// does: byOp maps an operator's name to the state filed under its ID, and
// unmapped lists the states no operator of spec has the ID of. A state
// written without an ID (before StateLab had uids) matches by name.
func mapStates(spec *JobSpec, meta *state.CheckpointMetadata) (byOp map[string]*state.OperatorState, unmapped []*state.OperatorState) {
	ids := spec.OperatorIDs()
	owner := make(map[string]string, len(ids))
	for name, id := range ids {
		owner[id] = name
	}
	// Alternative IDs (setUidHash) answer only where no operator has the
	// ID itself, as Flink's ExecutionJobVertex.includeAlternativeOperatorIDs.
	for _, o := range spec.Operators {
		if _, taken := owner[o.UIDHash]; o.UIDHash != "" && !taken {
			owner[o.UIDHash] = o.ID
		}
	}
	byOp = map[string]*state.OperatorState{}
	for i := range meta.Operators {
		os := &meta.Operators[i]
		name, ok := owner[os.Hash]
		if os.Hash == "" {
			_, ok = ids[os.OperatorID]
			name = os.OperatorID
		}
		if !ok {
			unmapped = append(unmapped, os)
			continue
		}
		byOp[name] = os
	}
	return byOp, unmapped
}

// hasState reports whether any subtask of os has keyed or operator state
// (Flink's OperatorSubtaskState.hasState): state that is empty everywhere
// is skipped without complaint, even without allowNonRestoredState.
func hasState(os *state.OperatorState) bool {
	for _, st := range os.Subtasks {
		if st.Keyed != nil && st.Keyed.StateSize > 0 {
			return true
		}
		if st.Operator != nil {
			for _, ns := range st.Operator.States {
				if len(ns.Elements) > 0 {
					return true
				}
			}
		}
	}
	return false
}
