package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sharedKafkaSavepoint(t *testing.T) string {
	dir := os.Getenv("STATELAB_SHARED")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared")
	}
	p := filepath.Join(dir, "flink-savepoints", "kafka-source-savepoint-v4._metadata")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared Flink savepoint not found (%v); set STATELAB_SHARED", err)
	}
	return p
}

// keyedMetadata writes, byte by byte as MetadataV3Serializer does, a version 3
// _metadata with one keyed operator (parallelism 2, max parallelism 4): subtask
// 0 holds key groups 0-1 inline (KEY_GROUPS_HANDLE_V2, offsets 2 and 6 in 10
// bytes), subtask 1 key groups 2-3 in a 100-byte file (offsets 1 and 40).
func keyedMetadata(t *testing.T) string {
	var b bytes.Buffer
	put := func(vs ...any) {
		for _, v := range vs {
			if s, ok := v.(string); ok {
				require.NoError(t, binary.Write(&b, binary.BigEndian, uint16(len(s))))
				b.WriteString(s)
				continue
			}
			require.NoError(t, binary.Write(&b, binary.BigEndian, v))
		}
	}
	put(int32(0x4960672d), int32(3), int64(7), int32(0), int32(1))
	put(int64(0x0a0b0c0d0e0f1011), int64(0x2122232425262728), int32(2), int32(4), byte(0), int32(2))
	put(int32(0), int32(0), int32(0), byte(12), int32(0), int32(2), int64(2), int64(6), byte(1), "inline", int32(10))
	b.Write(make([]byte, 10))
	put("id-0", byte(0), int32(0), int32(0))
	put(int32(1), int32(0), int32(0), byte(7), int32(2), int32(2), int64(1), int64(40), byte(2), int64(100), "file:/sp/kg-1")
	put(byte(0), int32(0), int32(0))
	p := filepath.Join(t.TempDir(), "_metadata")
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o600))
	return p
}

func keysOf(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// The JSON contract of issue 20: these keys, with these types, whatever else is added.
func TestSavepointInspectJSONShape(t *testing.T) {
	flink := filepath.Join("..", "..", "savepoint", "testdata", "flink", "2.3.0", "rocksdb-files-savepoint-canonical")
	for _, path := range []string{keyedMetadata(t), flink, sharedKafkaSavepoint(t)} {
		code, out, errs := run(t, "", "savepoint", "inspect", path, "--json")
		require.Equal(t, 0, code, errs)
		var doc map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		require.Subset(t, keysOf(doc), []string{"version", "checkpointId", "operators"})
		hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
		for _, o := range doc["operators"].([]any) {
			op := o.(map[string]any)
			require.Subset(t, keysOf(op), []string{"id", "name", "uid", "parallelism", "maxParallelism", "subtasks"})
			assert.Regexp(t, hex32, op["id"])
			for _, s := range op["subtasks"].([]any) {
				st := s.(map[string]any)
				require.Subset(t, keysOf(st), []string{"subtask", "operatorState", "keyedState"})
				for _, l := range st["operatorState"].([]any) {
					require.Subset(t, keysOf(l.(map[string]any)), []string{"name", "mode", "elements"})
					assert.Contains(t, []any{"SPLIT_DISTRIBUTE", "UNION", "BROADCAST"}, l.(map[string]any)["mode"])
				}
				for _, k := range st["keyedState"].([]any) {
					require.Subset(t, keysOf(k.(map[string]any)), []string{"start", "end", "bytes"})
				}
			}
		}
	}
}

func TestSavepointInspectKeyed(t *testing.T) {
	code, out, errs := run(t, "", "savepoint", "inspect", "--json", keyedMetadata(t))
	require.Equal(t, 0, code, errs)
	var rep struct {
		Version      int   `json:"version"`
		CheckpointID int64 `json:"checkpointId"`
		Operators    []struct {
			ID       string `json:"id"`
			Subtasks []struct {
				Subtask    int `json:"subtask"`
				KeyedState []struct {
					Start, End int
					Bytes      int64
				} `json:"keyedState"`
			} `json:"subtasks"`
		} `json:"operators"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 3, rep.Version)
	assert.Equal(t, int64(7), rep.CheckpointID)
	require.Len(t, rep.Operators, 1)
	assert.Equal(t, "0a0b0c0d0e0f10112122232425262728", rep.Operators[0].ID)
	st := rep.Operators[0].Subtasks
	require.Len(t, st, 2)
	assert.Equal(t, []int64{0, 1, 10}, []int64{int64(st[0].KeyedState[0].Start), int64(st[0].KeyedState[0].End), st[0].KeyedState[0].Bytes})
	assert.Equal(t, []int64{2, 3, 100}, []int64{int64(st[1].KeyedState[0].Start), int64(st[1].KeyedState[0].End), st[1].KeyedState[0].Bytes})

	// Rescale to 4: key group g goes to subtask g; bytes per key group come
	// from the offsets (4 and 4 inline; 39 and 60 in the file).
	code, out, errs = run(t, "", "savepoint", "plan", keyedMetadata(t), "--operator", "0A0B0C0D0E0F10112122232425262728", "--parallelism", "4", "--json")
	require.Equal(t, 0, code, errs)
	var plan struct {
		Subtasks []struct {
			KeyedBytes int64 `json:"keyedBytes"`
		} `json:"subtasks"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &plan))
	var got []int64
	for _, s := range plan.Subtasks {
		got = append(got, s.KeyedBytes)
	}
	assert.Equal(t, []int64{4, 4, 39, 60}, got)
}

func TestSavepointBadInput(t *testing.T) {
	notMeta := filepath.Join(t.TempDir(), "x")
	require.NoError(t, os.WriteFile(notMeta, []byte("hello world"), 0o600))
	meta := keyedMetadata(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"savepoint", "inspect"}, "exactly one PATH"},
		{[]string{"savepoint", "inspect", notMeta}, "0x68656c6c"},
		{[]string{"savepoint", "inspect", filepath.Join(t.TempDir(), "none")}, "cannot read"},
		{[]string{"savepoint", "inspect", t.TempDir()}, "no _metadata"},
		{[]string{"savepoint", "frob"}, "unknown subcommand"},
		{[]string{"savepoint", "plan", meta, "--parallelism", "2"}, "--operator and --parallelism are required"},
		{[]string{"savepoint", "plan", meta, "--operator", "nope", "--parallelism", "2"}, "0a0b0c0d0e0f10112122232425262728"},
		{[]string{"savepoint", "plan", meta, "--operator", "0a0b0c0d0e0f10112122232425262728", "--parallelism", "5"}, "maximum parallelism (4) is lower than the configured parallelism (5)"},
		{[]string{"savepoint", "plan", meta, "--operator", "0a0b0c0d0e0f10112122232425262728", "--parallelism", "0"}, "parallelism 0"},
	} {
		code, out, errs := run(t, "", c.args...)
		assert.Equal(t, 2, code, c.args)
		assert.Empty(t, out, c.args)
		assert.Equal(t, 1, strings.Count(errs, "\n"), "one line: %q", errs)
		assert.Contains(t, errs, c.want, c.args)
	}
}

func TestSavepointInspectText(t *testing.T) {
	path := sharedKafkaSavepoint(t)
	// A directory holding _metadata works as well as the file.
	dir := t.TempDir()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "_metadata"), b, 0o600))
	code, out, errs := run(t, "", "savepoint", "inspect", dir)
	require.Equal(t, 0, code, errs)
	assert.Contains(t, out, "format version 4")
	assert.Contains(t, out, "SourceReaderState")
	assert.Contains(t, out, "KafkaPartitionSplit")
}

// A savepoint Flink 2.3 wrote (metadata version 6, state in files beside
// _metadata): the operators' names and uids come through, and the keyed
// operator's two subtasks hold the job's 20 keys between them.
func TestSavepointInspectRealFlink(t *testing.T) {
	dir := filepath.Join("..", "..", "savepoint", "testdata", "flink", "2.3.0", "rocksdb-files-savepoint-canonical")
	code, out, errs := run(t, "", "savepoint", "inspect", dir, "--json")
	require.Equal(t, 0, code, errs)
	var rep struct {
		Version     int `json:"version"`
		LoadedFiles int `json:"loadedFiles"`
		Operators   []struct {
			Name     string `json:"name"`
			UID      string `json:"uid"`
			Subtasks []struct {
				KeyedState []struct {
					Values *struct {
						States []struct {
							Name    string `json:"name"`
							Entries int    `json:"entries"`
						} `json:"states"`
						KeyGroupChecked    int `json:"keyGroupChecked"`
						KeyGroupMismatches int `json:"keyGroupMismatches"`
					} `json:"values"`
				} `json:"keyedState"`
			} `json:"subtasks"`
		} `json:"operators"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	assert.Equal(t, 6, rep.Version)
	assert.Positive(t, rep.LoadedFiles)
	uids := map[string]string{}
	counts := 0
	for _, op := range rep.Operators {
		uids[op.UID] = op.Name
		for _, st := range op.Subtasks {
			for _, k := range st.KeyedState {
				require.NotNil(t, k.Values, op.UID)
				assert.Zero(t, k.Values.KeyGroupMismatches)
				for _, s := range k.Values.States {
					if s.Name == "count" {
						counts += s.Entries
					}
				}
			}
		}
	}
	assert.Equal(t, map[string]string{"numbers": "Source: numbers", "buffering": "buffering", "counting": "counting", "sink": "sink: Writer"}, uids)
	assert.Equal(t, 20, counts, "the job's keys key-0 … key-19, each counted once")
}
