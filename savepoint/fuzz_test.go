package savepoint

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FuzzRead feeds Read arbitrary bytes, seeded with the real KafkaSource
// savepoint and hand-assembled files of every version: it must never panic,
// and whatever it accepts must summarise and plan without panicking.
//
//	go test -run '^$' -fuzz FuzzRead -fuzztime 60s ./savepoint/
func FuzzRead(f *testing.F) {
	if b := kafkaSavepointOrNil(); b != nil {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	// The snapshots Flink wrote (testdata/flink), every version and handle kind they use.
	metas, _ := filepath.Glob(filepath.Join("testdata", "flink", "*", "*", "_metadata"))
	for _, p := range metas {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, v := range []int32{3, 5, 6, 7} {
		x := header(v, 1).i32(0).i32(1)
		opHead(x, v, "n", "u", 1, 2, 2, 4)
		x.u8(0).i32(1)
		emptySubtask(x, v, 0)
		f.Add(x.bytes())
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer func() {
			// Allocation stays a small multiple of the input (plus the
			// rescale plan's fixed arrays, at most 32768 key groups).
			runtime.ReadMemStats(&after)
			if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(200*len(b)+16<<20); got > limit {
				t.Fatalf("%d bytes of input allocated %d bytes (limit %d)", len(b), got, limit)
			}
		}()
		m, err := Read(b)
		if err != nil {
			return
		}
		rep := NewReport(m)
		if len(rep.Operators) != len(m.Operators) {
			t.Fatalf("report has %d operators, metadata %d", len(rep.Operators), len(m.Operators))
		}
		for i := range m.Operators {
			for _, p := range []int{1, 3} {
				_, _ = NewPlan(&m.Operators[i], p)
			}
		}
	})
}
