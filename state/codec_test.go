package state

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCodecs(t *testing.T) {
	b := Int64Codec.Append(nil, -2)
	assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe}, b)
	v, err := Int64Codec.Decode(b)
	require.NoError(t, err)
	assert.Equal(t, int64(-2), v)
	_, err = Int64Codec.Decode([]byte{1})
	assert.Error(t, err)
	// Big-endian: non-negative values sort as their bytes.
	assert.Negative(t, bytes.Compare(Int64Codec.Append(nil, 255), Int64Codec.Append(nil, 256)))

	type point struct{ X, Y int }
	jc := JSONCodec[point]()
	raw := jc.Append(nil, point{1, 2})
	assert.Equal(t, `{"X":1,"Y":2}`, string(raw))
	p, err := jc.Decode(raw)
	require.NoError(t, err)
	assert.Equal(t, point{1, 2}, p)
	assert.Equal(t, `{"X":1,"Y":2}`, rendererFor(jc)(raw))

	src := []byte("abc")
	cp, _ := BytesCodec.Decode(src)
	src[0] = 'z'
	assert.Equal(t, []byte("abc"), cp, "Decode must not alias its input")
}

func TestRenderBytes(t *testing.T) {
	assert.Equal(t, "héllo", RenderBytes([]byte("héllo")))
	assert.Equal(t, "0x0001", RenderBytes([]byte{0, 1}))
	assert.Equal(t, "0xff", RenderBytes([]byte{0xff}))
	assert.Equal(t, "", RenderBytes(nil))
}
