package savepoint

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// Agreement with Flink. Each directory under testdata/flink/ (or under
// $STATELAB_FLINK_SAVEPOINTS) holds a _metadata Flink wrote and flink.json:
// what Flink's own Checkpoints.loadCheckpointMetadata (and, for keyedValues,
// the State Processor API) read from it. The schema, every field optional:
//
//	{"flinkVersion":"1.20.1","backend":"hashmap|rocksdb","snapshot":"savepoint-canonical|savepoint-native|checkpoint",
//	 "metadata":{"checkpointId":3,"masterStates":0,"properties":{"savepoint":true,"formatType":"CANONICAL"},
//	   "operators":[{"id":"<OperatorID.toHexString()>","name":null,"uid":null,"parallelism":2,"maxParallelism":128,
//	     "coordinatorStateSize":0,"fullyFinished":false,
//	     "subtasks":[{"index":0,"finished":false,
//	       "managedOperatorState":[{"name":"…","mode":"SPLIT_DISTRIBUTE","offsets":[…]}],
//	       "managedKeyedState":[{"class":"KeyGroupsSavepointStateHandle","start":0,"end":63,"stateSize":1234}]}]}]},
//	 "keyedValues":{"<operator id>":{"<state>":{"<key as text>":<value>}}}}
//
// The test skips when there is no such directory.
type flinkReading struct {
	FlinkVersion string `json:"flinkVersion"`
	Backend      string `json:"backend"`
	Snapshot     string `json:"snapshot"`
	Metadata     *struct {
		CheckpointID *int64 `json:"checkpointId"`
		MasterStates *int   `json:"masterStates"`
		Properties   *struct {
			Savepoint  *bool  `json:"savepoint"`
			FormatType string `json:"formatType"`
		} `json:"properties"`
		Operators []struct {
			ID                   string  `json:"id"`
			Name                 *string `json:"name"`
			UID                  *string `json:"uid"`
			Parallelism          *int    `json:"parallelism"`
			MaxParallelism       *int    `json:"maxParallelism"`
			CoordinatorStateSize *int64  `json:"coordinatorStateSize"`
			FullyFinished        *bool   `json:"fullyFinished"`
			Subtasks             []struct {
				Index                int   `json:"index"`
				Finished             *bool `json:"finished"`
				ManagedOperatorState []struct {
					Name    string  `json:"name"`
					Mode    string  `json:"mode"`
					Offsets []int64 `json:"offsets"`
				} `json:"managedOperatorState"`
				ManagedKeyedState []struct {
					Class     string `json:"class"`
					Start     int    `json:"start"`
					End       int    `json:"end"`
					StateSize *int64 `json:"stateSize"`
				} `json:"managedKeyedState"`
				InputChannelHandles       *int   `json:"inputChannelHandles"`
				ResultSubpartitionHandles *int   `json:"resultSubpartitionHandles"`
				ChannelStateSize          *int64 `json:"channelStateSize"`
			} `json:"subtasks"`
		} `json:"operators"`
	} `json:"metadata"`
	KeyedValues map[string]map[string]map[string]any `json:"keyedValues"`
}

func flinkDirs(t *testing.T) []string {
	root := os.Getenv("STATELAB_FLINK_SAVEPOINTS")
	if root == "" {
		root = filepath.Join("testdata", "flink")
	}
	var dirs []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "flink.json" {
			dirs = append(dirs, filepath.Dir(p))
		}
		return nil
	})
	sort.Strings(dirs)
	if len(dirs) == 0 {
		t.Skipf("no savepoints written by Flink under %s (each: _metadata + flink.json)", root)
	}
	return dirs
}

func TestAgreesWithFlink(t *testing.T) {
	for _, dir := range flinkDirs(t) {
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			var want flinkReading
			raw, err := os.ReadFile(filepath.Join(dir, "flink.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatalf("flink.json: %v", err)
			}
			b, err := os.ReadFile(filepath.Join(dir, "_metadata"))
			if err != nil {
				t.Fatal(err)
			}
			m, err := Read(b)
			if err != nil {
				t.Fatalf("Flink %s read it; StateLab: %v", want.FlinkVersion, err)
			}
			if want.Metadata != nil {
				compareMetadata(t, m, &want)
			}
			compareKeyedValues(t, m, want.KeyedValues)
		})
	}
}

func compareMetadata(t *testing.T, m *Metadata, want *flinkReading) {
	w := want.Metadata
	if w.CheckpointID != nil && *w.CheckpointID != m.CheckpointID {
		t.Errorf("checkpoint id %d, Flink %d", m.CheckpointID, *w.CheckpointID)
	}
	if w.MasterStates != nil && *w.MasterStates != len(m.MasterStates) {
		t.Errorf("%d master states, Flink %d", len(m.MasterStates), *w.MasterStates)
	}
	if p := w.Properties; p != nil {
		if m.Properties == nil {
			t.Errorf("no properties (%s); Flink read them", m.PropertiesError)
		} else {
			if p.Savepoint != nil && *p.Savepoint != m.Properties.IsSavepoint() {
				t.Errorf("savepoint %v, Flink %v", m.Properties.IsSavepoint(), *p.Savepoint)
			}
			if p.FormatType != "" && p.FormatType != m.Properties.FormatType {
				t.Errorf("format %q, Flink %q", m.Properties.FormatType, p.FormatType)
			}
		}
	}
	if len(w.Operators) != len(m.Operators) {
		t.Fatalf("%d operators, Flink %d", len(m.Operators), len(w.Operators))
	}
	byID := map[string]*OperatorState{}
	for i := range m.Operators {
		byID[m.Operators[i].ID] = &m.Operators[i]
	}
	for _, wo := range w.Operators {
		op := byID[wo.ID]
		if op == nil {
			t.Errorf("Flink has operator %s, StateLab does not", wo.ID)
			continue
		}
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		if (wo.Name != nil || op.Name != "") && str(wo.Name) != op.Name {
			t.Errorf("%s: name %q, Flink %q", wo.ID, op.Name, str(wo.Name))
		}
		if (wo.UID != nil || op.UID != "") && str(wo.UID) != op.UID {
			t.Errorf("%s: uid %q, Flink %q", wo.ID, op.UID, str(wo.UID))
		}
		if wo.Parallelism != nil && *wo.Parallelism != op.Parallelism || wo.MaxParallelism != nil && *wo.MaxParallelism != op.MaxParallelism {
			t.Errorf("%s: parallelism %d/%d, Flink %v/%v", wo.ID, op.Parallelism, op.MaxParallelism, *wo.Parallelism, *wo.MaxParallelism)
		}
		if wo.CoordinatorStateSize != nil {
			var got int64
			if op.Coordinator != nil {
				got = op.Coordinator.Size
			}
			if got != *wo.CoordinatorStateSize {
				t.Errorf("%s: coordinator state %d bytes, Flink %d", wo.ID, got, *wo.CoordinatorStateSize)
			}
		}
		if wo.FullyFinished != nil && *wo.FullyFinished != op.FullyFinished {
			t.Errorf("%s: fully finished %v, Flink %v", wo.ID, op.FullyFinished, *wo.FullyFinished)
		}
		subs := map[int]*SubtaskState{}
		for i := range op.Subtasks {
			subs[op.Subtasks[i].Index] = &op.Subtasks[i]
		}
		if len(wo.Subtasks) != len(op.Subtasks) {
			t.Errorf("%s: %d subtask states, Flink %d", wo.ID, len(op.Subtasks), len(wo.Subtasks))
		}
		for _, ws := range wo.Subtasks {
			st := subs[ws.Index]
			where := fmt.Sprintf("%s subtask %d", wo.ID, ws.Index)
			if st == nil {
				t.Errorf("%s: missing", where)
				continue
			}
			if ws.Finished != nil && *ws.Finished != st.Finished {
				t.Errorf("%s: finished %v, Flink %v", where, st.Finished, *ws.Finished)
			}
			if ws.InputChannelHandles != nil && *ws.InputChannelHandles != len(st.InputChannelState) ||
				ws.ResultSubpartitionHandles != nil && *ws.ResultSubpartitionHandles != len(st.ResultSubpartitionState) {
				t.Errorf("%s: %d input and %d output channel handles, Flink %d and %d", where, len(st.InputChannelState), len(st.ResultSubpartitionState), *ws.InputChannelHandles, *ws.ResultSubpartitionHandles)
			}
			if ws.ChannelStateSize != nil {
				var size int64
				for _, c := range append(append([]ChannelHandle{}, st.InputChannelState...), st.ResultSubpartitionState...) {
					size += c.Size
				}
				if size != *ws.ChannelStateSize {
					t.Errorf("%s: channel state %d bytes, Flink %d", where, size, *ws.ChannelStateSize)
				}
			}
			var got []NamedOperatorState
			if st.ManagedOperatorState != nil {
				got = st.ManagedOperatorState.States
			}
			gotByName := map[string]NamedOperatorState{}
			for _, ns := range got {
				gotByName[ns.Name] = ns
			}
			if len(ws.ManagedOperatorState) != len(got) {
				t.Errorf("%s: %d operator states, Flink %d", where, len(got), len(ws.ManagedOperatorState))
			}
			for _, wn := range ws.ManagedOperatorState {
				ns, ok := gotByName[wn.Name]
				if !ok || string(ns.Mode) != wn.Mode || fmt.Sprint(ns.Offsets) != fmt.Sprint(wn.Offsets) {
					t.Errorf("%s: operator state %q: %+v, Flink %+v", where, wn.Name, ns, wn)
				}
			}
			var keyed []*KeyedHandle
			if st.ManagedKeyedState != nil {
				keyed = append(keyed, st.ManagedKeyedState)
			}
			if len(ws.ManagedKeyedState) != len(keyed) {
				t.Errorf("%s: %d keyed handles, Flink %d", where, len(keyed), len(ws.ManagedKeyedState))
				continue
			}
			for i, wk := range ws.ManagedKeyedState {
				k := keyed[i]
				if (wk.Class != "" && wk.Class != k.Kind) || wk.Start != k.Range.Start || wk.End != k.Range.End || (wk.StateSize != nil && *wk.StateSize != k.Size()) {
					t.Errorf("%s: keyed %s %v %d bytes, Flink %+v", where, k.Kind, k.Range, k.Size(), wk)
				}
			}
		}
	}
}

// compareKeyedValues checks every value the State Processor API read against
// the decoded entries (when StateLab decodes that state at all).
func compareKeyedValues(t *testing.T, m *Metadata, want map[string]map[string]map[string]any) {
	for opID, states := range want {
		op, err := m.FindOperator(opID)
		if err != nil {
			t.Errorf("keyed values of %s: %v", opID, err)
			continue
		}
		got := map[string]map[string]any{}
		undecoded := map[string]string{}
		for _, st := range op.Subtasks {
			v := decodeKeyedState(st.ManagedKeyedState, op.MaxParallelism, 1<<30)
			if st.ManagedKeyedState == nil {
				continue
			}
			if v.NotDecoded != "" {
				undecoded["*"] = v.NotDecoded
			}
			if v.KeyGroupMismatches != 0 {
				t.Errorf("%s subtask %d: %d of %d keys are not in the key group Flink's assignment gives them", opID, st.Index, v.KeyGroupMismatches, v.KeyGroupChecked)
			}
			for _, s := range v.States {
				if s.NotDecoded != "" {
					undecoded[s.Name] = s.NotDecoded
				}
				if got[s.Name] == nil {
					got[s.Name] = map[string]any{}
				}
				for _, e := range s.Samples {
					key := fmt.Sprint(e.Key)
					if e.UserKey != nil {
						key += "/" + fmt.Sprint(e.UserKey)
					}
					got[s.Name][key] = e.Value
				}
			}
		}
		for name, entries := range states {
			if why, ok := undecoded[name]; ok {
				t.Logf("%s %q not decoded: %s", opID, name, why)
				continue
			}
			if why, ok := undecoded["*"]; ok {
				t.Logf("%s not decoded: %s", opID, why)
				continue
			}
			for k, wv := range entries {
				gv, ok := got[name][k]
				if !ok || fmt.Sprint(normalize(gv)) != fmt.Sprint(normalize(wv)) {
					t.Errorf("%s %q[%s] = %v, Flink %v", opID, name, k, gv, wv)
				}
			}
			if len(got[name]) != len(entries) {
				t.Errorf("%s %q: %d entries, Flink %d", opID, name, len(got[name]), len(entries))
			}
		}
	}
}

// normalize makes JSON numbers and Go integers compare equal.
func normalize(v any) any {
	switch x := v.(type) {
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = normalize(x[i])
		}
		return out
	}
	return v
}

// TestFlinkJobState checks the decoded values of the savepoints SavepointGen
// wrote (testdata/flinkgen) against what its job does, which StateLab's code
// does not know: keys key-0 … key-19, each counted in ValueState "count",
// its first three arrivals in ListState "seen" ("key-N#1" …), its arrivals
// spread over MapState "perSuffix" (so the map's values sum to the count),
// every key in the key group Flink's assignment gives it and held by the one
// subtask whose range has that group; and the "buffering" map's operator
// state: at most five numbers in "buffer" (SPLIT_DISTRIBUTE) and their count
// in "everyone" (UNION).
func TestFlinkJobState(t *testing.T) {
	for _, dir := range flinkDirs(t) {
		var want flinkReading
		raw, _ := os.ReadFile(filepath.Join(dir, "flink.json"))
		if json.Unmarshal(raw, &want) != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Read(b)
		if err != nil {
			t.Fatal(err)
		}
		root, err := os.OpenRoot(dir)
		if err != nil {
			t.Fatal(err)
		}
		m.LoadFiles(root.FS(), "", 64<<20)
		root.Close()
		// Before metadata version 5 there are no uids in the file; the ids
		// are Flink's hashes of the uids (StreamGraphHasherV2), the same in
		// every version.
		counting, err := m.FindOperator("counting")
		if err != nil {
			if counting, err = m.FindOperator("b2661969db4854994bd07b8fac9e10cc"); err != nil {
				continue // not SavepointGen's job
			}
		}
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			fullSnapshot := want.Snapshot == "savepoint-canonical" || want.Backend == "hashmap"
			owner := map[string]int{}
			for _, st := range counting.Subtasks {
				h := st.ManagedKeyedState
				if h == nil {
					t.Fatalf("subtask %d has no keyed state", st.Index)
				}
				if !fullSnapshot || !h.Delegate.HasData() {
					continue // RocksDB's own files: not decoded
				}
				v := decodeKeyedState(h, counting.MaxParallelism, 1<<20)
				if v.NotDecoded != "" || v.KeyGroupMismatches != 0 || v.KeyGroupChecked == 0 {
					t.Fatalf("subtask %d: %s; %d of %d keys in another key group", st.Index, v.NotDecoded, v.KeyGroupMismatches, v.KeyGroupChecked)
				}
				count, seen, perSuffix := map[string]int64{}, map[string][]any{}, map[string]int64{}
				for _, s := range v.States {
					if s.NotDecoded != "" {
						t.Errorf("subtask %d state %q: %s", st.Index, s.Name, s.NotDecoded)
					}
					for _, e := range s.Samples {
						k := e.Key.(string)
						if !h.Range.Contains(e.KeyGroup) {
							t.Errorf("%s in key group %d, outside subtask %d's range %v", k, e.KeyGroup, st.Index, h.Range)
						}
						switch s.Name {
						case "count":
							count[k] = e.Value.(int64)
						case "seen":
							seen[k] = e.Value.([]any)
						case "perSuffix":
							if e.UserKey != nil { // a full snapshot: one entry per map key
								perSuffix[k] += e.Value.(int64)
							} else { // a heap checkpoint: the whole map
								for _, kv := range e.Value.([][2]any) {
									perSuffix[k] += kv[1].(int64)
								}
							}
						}
					}
				}
				for k, c := range count {
					if prev, dup := owner[k]; dup {
						t.Errorf("%s held by subtasks %d and %d", k, prev, st.Index)
					}
					owner[k] = st.Index
					if perSuffix[k] != c {
						t.Errorf("%s: count %d, perSuffix sums to %d", k, c, perSuffix[k])
					}
					wantSeen := []any{}
					for i := int64(1); i <= min(c, 3); i++ {
						wantSeen = append(wantSeen, fmt.Sprintf("%s#%d", k, i))
					}
					if fmt.Sprint(seen[k]) != fmt.Sprint(wantSeen) {
						t.Errorf("%s: seen %v, want %v", k, seen[k], wantSeen)
					}
				}
			}
			if fullSnapshot && len(owner) != 20 && (want.Backend == "hashmap" || want.Snapshot == "savepoint-canonical") {
				t.Errorf("%d keys decoded, the job has 20", len(owner))
			}
			buffering, err := m.FindOperator("buffering")
			if err != nil {
				if buffering, err = m.FindOperator("b303a366fe308f7c1a07602f4721c431"); err != nil {
					t.Fatal(err)
				}
			}
			for _, st := range buffering.Subtasks {
				vals := map[string][]Element{}
				for _, sv := range DecodeOperatorState(st.ManagedOperatorState) {
					if sv.NotDecoded != "" {
						if st.ManagedOperatorState.Delegate.HasData() {
							t.Errorf("subtask %d %q: %s", st.Index, sv.Name, sv.NotDecoded)
						}
						continue
					}
					vals[sv.Name] = sv.Elements
				}
				if len(vals) == 0 {
					continue
				}
				// UNION: each subtask's handle holds the one count it wrote.
				if len(vals["buffer"]) > 5 || len(vals["everyone"]) != 1 {
					t.Errorf("subtask %d: buffer %v, everyone %v", st.Index, vals["buffer"], vals["everyone"])
					continue
				}
				if got := vals["everyone"][0].Value; got != int64(len(vals["buffer"])) {
					t.Errorf("subtask %d: everyone says %v, buffer has %d", st.Index, got, len(vals["buffer"]))
				}
			}
		})
	}
}

// On Flink's own snapshots, a restore with any parallelism reads every key
// group exactly once and every byte of keyed state once
// (StateAssignmentOperation hands each key group to exactly one subtask).
func TestPlanOnFlinkSnapshots(t *testing.T) {
	for _, dir := range flinkDirs(t) {
		b, err := os.ReadFile(filepath.Join(dir, "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Read(b)
		if err != nil {
			t.Fatal(err)
		}
		for i := range m.Operators {
			op := &m.Operators[i]
			var total int64
			whole := false
			for _, st := range op.Subtasks {
				if h := st.ManagedKeyedState; h != nil {
					if per := h.KeyGroupBytes(); per != nil {
						for _, n := range per {
							total += n
						}
					} else {
						whole = true
					}
				}
			}
			for _, p := range []int{1, 2, 3, 4, 7, op.MaxParallelism} {
				plan, err := NewPlan(op, p)
				if err != nil {
					t.Fatalf("%s %s to %d: %v", dir, op.ID, p, err)
				}
				seen := make([]int, op.MaxParallelism)
				var read int64
				for _, st := range plan.Subtasks {
					for _, r := range st.KeyedReads {
						for g := r.Range.Start; g <= r.Range.End; g++ {
							seen[g]++
						}
					}
					read += st.KeyedBytes
				}
				for g, n := range seen {
					if total > 0 && n != 1 {
						t.Fatalf("%s %s to %d: key group %d read %d times", filepath.Base(dir), op.ID, p, g, n)
					}
				}
				if !whole && read != total {
					t.Errorf("%s %s to %d: reads %d bytes of %d", filepath.Base(dir), op.ID, p, read, total)
				}
			}
		}
	}
}

// TestFlinkWindowState checks the window job's snapshots (SavepointGen
// "window": keys key-0 … key-19, a one-hour tumbling processing-time window
// reducing to the first element): the window contents of each key is the key
// itself, in a window of one hour, and each key has a processing-time timer
// at that window's end - 1 (WindowOperator registers window.maxTimestamp()).
func TestFlinkWindowState(t *testing.T) {
	for _, dir := range flinkDirs(t) {
		var want flinkReading
		raw, _ := os.ReadFile(filepath.Join(dir, "flink.json"))
		if json.Unmarshal(raw, &want) != nil || (want.Backend != "hashmap" && want.Snapshot != "savepoint-canonical") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Read(b)
		if err != nil {
			t.Fatal(err)
		}
		op, err := m.FindOperator("01203aa9a12dc1ec725e03853dd7c8f2") // Flink's hash of the uid "window"
		if err != nil {
			continue
		}
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			contents, timers := map[string]any{}, map[string]any{}
			for _, st := range op.Subtasks {
				v := decodeKeyedState(st.ManagedKeyedState, op.MaxParallelism, 1<<20)
				if v.NotDecoded != "" || v.KeyGroupMismatches != 0 {
					t.Fatalf("subtask %d: %s (%d of %d keys elsewhere)", st.Index, v.NotDecoded, v.KeyGroupMismatches, v.KeyGroupChecked)
				}
				for _, s := range v.States {
					if s.NotDecoded != "" {
						t.Fatalf("%q: %s", s.Name, s.NotDecoded)
					}
					for _, e := range s.Samples {
						w, ok := e.Namespace.(map[string]int64)
						if !ok || w["end"]-w["start"] != 3_600_000 {
							t.Fatalf("%q %v: window %v is not one hour", s.Name, e.Key, e.Namespace)
						}
						switch s.Name {
						case "window-contents":
							if e.Value != e.Key {
								t.Errorf("window contents of %v is %v, the reduce keeps the first element (the key)", e.Key, e.Value)
							}
							contents[e.Key.(string)] = w
						case "_timer_state/processing_window-timers":
							if ts := e.Value.(map[string]int64)["timestamp"]; ts != w["end"]-1 {
								t.Errorf("timer of %v at %d, its window ends at %d", e.Key, ts, w["end"])
							}
							timers[e.Key.(string)] = w
						}
					}
				}
			}
			if len(contents) != 20 || fmt.Sprint(contents) != fmt.Sprint(timers) {
				t.Errorf("%d keys with window contents, timers for %d; windows %v and %v", len(contents), len(timers), contents, timers)
			}
		})
	}
}

// TestFlinkBroadcastState checks the broadcast job's savepoints (SavepointGen
// "broadcast": rules rule-0 … rule-2, round robin, counted in a
// BroadcastState): every subtask holds the same map, of those rules only,
// whose counts differ by at most one.
func TestFlinkBroadcastState(t *testing.T) {
	for _, dir := range flinkDirs(t) {
		b, err := os.ReadFile(filepath.Join(dir, "_metadata"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := Read(b)
		if err != nil {
			t.Fatal(err)
		}
		op, err := m.FindOperator("cca0299e46ed38c459bcd7454e25ef13") // Flink's hash of the uid "rules-applied"
		if err != nil {
			continue
		}
		t.Run(filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir), func(t *testing.T) {
			var first string
			for _, st := range op.Subtasks {
				vals := DecodeOperatorState(st.ManagedOperatorState)
				if len(vals) != 1 || vals[0].Name != "rules" || vals[0].Mode != "BROADCAST" || vals[0].NotDecoded != "" || len(vals[0].Elements) != 1 {
					t.Fatalf("subtask %d: %+v", st.Index, vals)
				}
				entries, ok := vals[0].Elements[0].Value.([][2]any)
				if !ok || len(entries) == 0 {
					t.Fatalf("subtask %d: %+v", st.Index, vals[0].Elements[0])
				}
				lo, hi := int64(1<<62), int64(0)
				for _, kv := range entries {
					if k := kv[0].(string); k != "rule-0" && k != "rule-1" && k != "rule-2" {
						t.Errorf("subtask %d: rule %q", st.Index, k)
					}
					n := kv[1].(int64)
					lo, hi = min(lo, n), max(hi, n)
				}
				if len(entries) == 3 && hi-lo > 1 {
					t.Errorf("subtask %d: round-robin rules counted %d to %d", st.Index, lo, hi)
				}
				if s := fmt.Sprint(entries); first == "" {
					first = s
				} else if s != first {
					t.Errorf("subtask %d holds %s, subtask 0 %s", st.Index, s, first)
				}
			}
		})
	}
}
