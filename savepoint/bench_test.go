package savepoint

import "testing"

// BenchmarkReadKafkaSavepoint reads and summarises the shared 2.9 KB file.
//
//	go test -run '^$' -bench . -benchmem ./savepoint/
func BenchmarkReadKafkaSavepoint(b *testing.B) {
	data := kafkaSavepointOrNil()
	if data == nil {
		b.Skip("shared savepoint not found")
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		m, err := Read(data)
		if err != nil {
			b.Fatal(err)
		}
		_ = NewReport(m)
	}
}

// BenchmarkReadLargeMetadata reads a file of 100 operators × 128 subtasks,
// each with a key-groups handle of one key group in a file.
func BenchmarkReadLargeMetadata(b *testing.B) {
	x := header(4, 1).i32(0).i32(100)
	for op := range 100 {
		opHead(x, 4, "", "", int64(op), 7, 128, 128)
		x.u8(0).i32(128)
		for st := range 128 {
			x.i32(int32(st)).i32(0).i32(0)
			x.u8(codeKeyGroupsV2).i32(int32(st)).i32(1).i64(10)
			x.u8(codeFileStream).i64(1000).utf("s3://bucket/checkpoints/job/chk-1/0123456789abcdef").utf("handle-id")
			x.u8(0).i32(0).i32(0)
		}
	}
	x.raw([]byte{0xAC, 0xED, 0x00, 0x05, 0x70})
	data := x.bytes()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Read(data); err != nil {
			b.Fatal(err)
		}
	}
}
