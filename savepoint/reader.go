package savepoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
)

// reader reads Java DataInput's big-endian primitives from a byte slice. It
// never allocates more than the bytes it still has: every length prefix is
// checked against what remains before anything is made from it, so a hostile
// file cannot make the reader allocate unboundedly or panic.
type reader struct {
	b   []byte
	pos int
	// depth bounds the nesting of handles inside handles (changelog handles
	// hold keyed handles, key-groups stream handles hold stream handles).
	depth int
}

// maxDepth is far above anything Flink writes (a changelog handle holding a
// key-groups handle holding a stream handle is three deep).
const maxDepth = 16

// ErrTruncated is returned when the file ends inside a structure.
var ErrTruncated = errors.New("savepoint: file ends early")

// ErrCorrupt is returned when a value is impossible for Flink to have written
// (a negative count, a length beyond the end of the file, nesting too deep).
var ErrCorrupt = errors.New("savepoint: corrupt metadata")

func (r *reader) remaining() int { return len(r.b) - r.pos }

func (r *reader) need(n int, what string) error {
	if n < 0 || n > r.remaining() {
		return fmt.Errorf("%w: %s needs %d bytes at offset %d, %d left", ErrTruncated, what, n, r.pos, r.remaining())
	}
	return nil
}

func (r *reader) u8(what string) (byte, error) {
	if err := r.need(1, what); err != nil {
		return 0, err
	}
	v := r.b[r.pos]
	r.pos++
	return v, nil
}

func (r *reader) i8(what string) (int8, error) {
	v, err := r.u8(what)
	return int8(v), err
}

func (r *reader) boolean(what string) (bool, error) {
	v, err := r.u8(what)
	return v != 0, err
}

func (r *reader) u16(what string) (uint16, error) {
	if err := r.need(2, what); err != nil {
		return 0, err
	}
	v := binary.BigEndian.Uint16(r.b[r.pos:])
	r.pos += 2
	return v, nil
}

func (r *reader) i32(what string) (int32, error) {
	if err := r.need(4, what); err != nil {
		return 0, err
	}
	v := int32(binary.BigEndian.Uint32(r.b[r.pos:]))
	r.pos += 4
	return v, nil
}

func (r *reader) i64(what string) (int64, error) {
	if err := r.need(8, what); err != nil {
		return 0, err
	}
	v := int64(binary.BigEndian.Uint64(r.b[r.pos:]))
	r.pos += 8
	return v, nil
}

// bytes returns the next n bytes (a sub-slice, not a copy).
func (r *reader) bytes(n int, what string) ([]byte, error) {
	if err := r.need(n, what); err != nil {
		return nil, err
	}
	v := r.b[r.pos : r.pos+n : r.pos+n]
	r.pos += n
	return v, nil
}

// count reads an int count of items that each take at least minSize bytes,
// and refuses one the rest of the file cannot hold.
func (r *reader) count(what string, minSize int) (int, error) {
	at := r.pos
	n, err := r.i32(what)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, fmt.Errorf("%w: %s is %d at offset %d", ErrCorrupt, what, n, at)
	}
	if minSize > 0 && int64(n)*int64(minSize) > int64(r.remaining()) {
		return 0, fmt.Errorf("%w: %s is %d at offset %d, but only %d bytes follow", ErrCorrupt, what, n, at, r.remaining())
	}
	return int(n), nil
}

// utf reads a string written by Java's DataOutput.writeUTF: an unsigned
// 16-bit byte length, then modified UTF-8 (U+0000 as C0 80, characters
// outside the BMP as two 3-byte surrogates).
func (r *reader) utf(what string) (string, error) {
	n, err := r.u16(what + " length")
	if err != nil {
		return "", err
	}
	b, err := r.bytes(int(n), what)
	if err != nil {
		return "", err
	}
	s, ok := decodeModifiedUTF8(b)
	if !ok {
		return "", fmt.Errorf("%w: %s is not modified UTF-8 (offset %d)", ErrCorrupt, what, r.pos-int(n))
	}
	return s, nil
}

// decodeModifiedUTF8 decodes Java's modified UTF-8 the way
// DataInputStream.readUTF does, rejecting what it rejects.
func decodeModifiedUTF8(b []byte) (string, bool) {
	ascii := true
	for _, c := range b {
		if c == 0 || c >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return string(b), true
	}
	units := make([]uint16, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80 && c != 0:
			units = append(units, uint16(c))
			i++
		case c&0xE0 == 0xC0:
			if i+1 >= len(b) || b[i+1]&0xC0 != 0x80 {
				return "", false
			}
			units = append(units, uint16(c&0x1F)<<6|uint16(b[i+1]&0x3F))
			i += 2
		case c&0xF0 == 0xE0:
			if i+2 >= len(b) || b[i+1]&0xC0 != 0x80 || b[i+2]&0xC0 != 0x80 {
				return "", false
			}
			units = append(units, uint16(c&0x0F)<<12|uint16(b[i+1]&0x3F)<<6|uint16(b[i+2]&0x3F))
			i += 3
		default:
			return "", false
		}
	}
	return string(utf16.Decode(units)), true
}

func (r *reader) enter(what string) error {
	r.depth++
	if r.depth > maxDepth {
		return fmt.Errorf("%w: %s nested more than %d deep at offset %d", ErrCorrupt, what, maxDepth, r.pos)
	}
	return nil
}

func (r *reader) leave() { r.depth-- }
