package savepoint

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
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
		return failed(ErrTruncated, reason(ReasonTruncated, "what", what, "need", itoa(n), "offset", itoa(r.pos), "left", itoa(r.remaining())),
			"%s needs %d bytes at offset %d, %d left", what, n, r.pos, r.remaining())
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
		return 0, failed(ErrCorrupt, reason(ReasonNegativeCount, "what", what, "value", itoa(n), "offset", itoa(at)),
			"%s is %d at offset %d", what, n, at)
	}
	if minSize > 0 && int64(n)*int64(minSize) > int64(r.remaining()) {
		return 0, countBeyond(what, int64(n), at, r.remaining())
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
		return "", failed(ErrCorrupt, reason(ReasonNotUTF8, "what", what, "offset", itoa(r.pos-int(n))),
			"%s is not modified UTF-8 (offset %d)", what, r.pos-int(n))
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
		return failed(ErrCorrupt, reason(ReasonTooDeep, "what", what, "depth", itoa(maxDepth), "offset", itoa(r.pos)),
			"%s nested more than %d deep at offset %d", what, maxDepth, r.pos)
	}
	return nil
}

func (r *reader) leave() { r.depth-- }

// failure is a reader failure: kind is the sentinel it wraps (ErrTruncated,
// ErrCorrupt, ErrNotMetadata, ErrVersion, ErrHandleKind), r the reason code
// with the numbers the page puts in its own language's sentence (offsets,
// sizes, counts, versions), text the English message after the sentinel's.
type failure struct {
	kind error
	r    Reason
	text string
}

func (f *failure) Error() string { return f.kind.Error() + ": " + f.text }
func (f *failure) Unwrap() error { return f.kind }

// failed is a failure of kind with reason r and the English text.
func failed(kind error, r Reason, format string, a ...any) error {
	return &failure{kind: kind, r: r, text: fmt.Sprintf(format, a...)}
}

// countBeyond: a count at offset at whose items cannot fit in the left bytes.
func countBeyond(what string, n int64, at, left int) error {
	return failed(ErrCorrupt, reason(ReasonCountBeyond, "what", what, "value", strconv.FormatInt(n, 10), "offset", itoa(at), "left", itoa(left)),
		"%s is %d at offset %d, but only %d bytes follow", what, n, at, left)
}

// located says where in the file a failure happened (a master state, an
// operator, a subtask's handle): r is the place's reason, whose {cause} is
// err's; the English text is "<place>: <err>".
type located struct {
	r    Reason
	text string
	err  error
}

func (l *located) Error() string { return l.text + ": " + l.err.Error() }
func (l *located) Unwrap() error { return l.err }

// within wraps err with the place it happened.
func within(err error, r Reason, format string, a ...any) error {
	return &located{r: r, text: fmt.Sprintf(format, a...), err: err}
}

func itoa[T ~int | ~int8 | ~uint8 | ~int32 | ~int64](v T) string {
	return strconv.FormatInt(int64(v), 10)
}

// hex32 writes a 32-bit value as Flink's messages do (0x…, eight digits).
func hex32(v uint32) string { return fmt.Sprintf("0x%08x", v) }
