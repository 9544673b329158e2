package state

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Codec turns values of type T into bytes and back, the role Flink's
// TypeSerializer plays. Append must be deterministic: equal values give equal
// bytes, because MapState user keys are looked up by their encoding.
type Codec[T any] interface {
	// Append appends the encoding of v to dst and returns the extended slice.
	Append(dst []byte, v T) []byte
	// Decode reads a value from exactly src. It must not retain src.
	Decode(src []byte) (T, error)
}

// Formatter is an optional Codec method that renders an encoded value for the
// state inspector without decoding it (JSONCodec shows the JSON text).
type Formatter interface {
	Format(src []byte) string
}

// Built-in codecs.
var (
	// StringCodec stores a string's UTF-8 bytes as they are.
	StringCodec Codec[string] = stringCodec{}
	// Int64Codec stores an int64 as 8 bytes, big-endian.
	Int64Codec Codec[int64] = int64Codec{}
	// BytesCodec stores a byte slice as it is; Decode returns a copy.
	BytesCodec Codec[[]byte] = bytesCodec{}
)

// JSONCodec stores T as its encoding/json text. Append panics if T cannot be
// marshalled (a channel, a func), which is a programming error.
func JSONCodec[T any]() Codec[T] { return jsonCodec[T]{} }

type stringCodec struct{}

func (stringCodec) Append(dst []byte, v string) []byte { return append(dst, v...) }
func (stringCodec) Decode(src []byte) (string, error)  { return string(src), nil }

type int64Codec struct{}

func (int64Codec) Append(dst []byte, v int64) []byte {
	return binary.BigEndian.AppendUint64(dst, uint64(v))
}
func (int64Codec) Decode(src []byte) (int64, error) {
	if len(src) != 8 {
		return 0, fmt.Errorf("state: decode int64: want 8 bytes, have %d", len(src))
	}
	return int64(binary.BigEndian.Uint64(src)), nil
}

type bytesCodec struct{}

func (bytesCodec) Append(dst []byte, v []byte) []byte { return append(dst, v...) }
func (bytesCodec) Decode(src []byte) ([]byte, error)  { return append([]byte{}, src...), nil }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Append(dst []byte, v T) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("state: JSONCodec cannot encode %T: %v", v, err))
	}
	return append(dst, b...)
}

func (jsonCodec[T]) Decode(src []byte) (T, error) {
	var v T
	if err := json.Unmarshal(src, &v); err != nil {
		return v, fmt.Errorf("state: decode json: %w", err)
	}
	return v, nil
}

func (jsonCodec[T]) Format(src []byte) string { return string(src) }

// renderer shows encoded bytes to a person.
type renderer func([]byte) string

// rendererFor renders with c: its Format method if it has one, else Decode
// and fmt's %v; bytes it cannot decode are shown as hex.
func rendererFor[T any](c Codec[T]) renderer {
	if f, ok := c.(Formatter); ok {
		return f.Format
	}
	return func(b []byte) string {
		v, err := c.Decode(b)
		if err != nil {
			return "0x" + hex.EncodeToString(b)
		}
		return fmt.Sprint(v)
	}
}

// RenderBytes is the default rendering of serialized bytes whose codec is not
// known (a key, or a state restored but not yet registered again): the text
// itself when it is printable UTF-8, else 0x-prefixed hex.
func RenderBytes(b []byte) string {
	if utf8.Valid(b) {
		printable := true
		for _, r := range string(b) {
			if !unicode.IsPrint(r) {
				printable = false
				break
			}
		}
		if printable {
			return string(b)
		}
	}
	return "0x" + hex.EncodeToString(b)
}
