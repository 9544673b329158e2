package savepoint

import (
	"strings"
	"testing"
)

// A retained checkpoint's properties, written by hand after the Java Object
// Serialization Stream Protocol: CheckpointProperties{forced, unclaimed,
// checkpointType} where checkpointType is a CheckpointType{name,
// sharingFilesStrategy}, the strategy an enum (class descriptor chain ending in
// java.lang.Enum), and a back reference to the String class name.
func TestCheckpointTypeProperties(t *testing.T) {
	const tcObject, tcClassDesc, tcString, tcEnum, tcEnd, tcNull = 0x73, 0x72, 0x74, 0x7e, 0x78, 0x70
	x := newW().raw([]byte{0xAC, 0xED, 0x00, 0x05})
	// handle 0: CheckpointProperties class desc
	x.u8(tcObject).u8(tcClassDesc).utf("org.apache.flink.runtime.checkpoint.CheckpointProperties").i64(2).u8(0x02)
	x.raw([]byte{0, 3})
	x.u8('Z').utf("forced")
	x.u8('Z').utf("unclaimed")
	x.u8('L').utf("checkpointType").u8(tcString).utf("Lorg/apache/flink/runtime/checkpoint/SnapshotType;") // handle 1
	x.u8(tcEnd).u8(tcNull)
	// handle 2: the object; field values: forced, unclaimed, then the object field
	x.u8(1).u8(0)
	// handle 3: CheckpointType class desc
	x.u8(tcObject).u8(tcClassDesc).utf("org.apache.flink.runtime.checkpoint.CheckpointType").i64(1).u8(0x02)
	x.raw([]byte{0, 2})
	x.u8('L').utf("name").u8(tcString).utf("Ljava/lang/String;")                                                                      // handle 4
	x.u8('L').utf("sharingFilesStrategy").u8(tcString).utf("Lorg/apache/flink/runtime/checkpoint/SnapshotType$SharingFilesStrategy;") // handle 5
	x.u8(tcEnd).u8(tcNull)
	// handle 6: the CheckpointType object: name, then the enum
	x.u8(tcString).utf("Full Checkpoint") // handle 7
	// handle 8: enum class desc, super java.lang.Enum (handle 9)
	x.u8(tcEnum).u8(tcClassDesc).utf("org.apache.flink.runtime.checkpoint.SnapshotType$SharingFilesStrategy").i64(0).u8(0x12).raw([]byte{0, 0}).u8(tcEnd)
	x.u8(tcClassDesc).utf("java.lang.Enum").i64(0).u8(0x12).raw([]byte{0, 0}).u8(tcEnd).u8(tcNull)
	x.u8(tcString).utf("NO_SHARING") // handle 10 (the enum is handle 9... numbering only matters for references)
	p, err := readProperties(x.bytes())
	if err != nil {
		t.Fatal(err)
	}
	if p.IsSavepoint() || p.SnapshotType != "CheckpointType" || p.Name != "Full Checkpoint" || p.SharingFilesStrategy != "NO_SHARING" {
		t.Fatalf("%+v", p)
	}
	if !p.Flags["forced"] || p.Flags["unclaimed"] {
		t.Fatalf("flags %v", p.Flags)
	}
	// A stream that is not Java serialization, and one that ends early, are errors.
	if _, err := readProperties([]byte("not java")); err == nil || !strings.Contains(err.Error(), "0xaced0005") {
		t.Fatalf("%v", err)
	}
	b := x.bytes()
	for n := 0; n < len(b); n++ {
		if _, err := readProperties(b[:n]); err == nil {
			t.Fatalf("prefix of %d bytes read", n)
		}
	}
}
