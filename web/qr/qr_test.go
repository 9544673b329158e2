package qr

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Reed–Solomon example of the standard's tutorials: "HELLO WORLD" in
// alphanumeric mode at 1-M gives these 16 data codewords, whose 10 error
// correction codewords are known.
func TestReedSolomonKnownVector(t *testing.T) {
	data := []byte{32, 91, 11, 120, 209, 114, 220, 77, 67, 64, 236, 17, 236, 17, 236, 17}
	want := []byte{196, 35, 39, 119, 235, 215, 231, 226, 93, 23}
	assert.Equal(t, want, rsRemainder(data, generator(10)))
}

// Format information strings from the standard's table (annex C), level
// then mask.
func TestFormatBitsKnownTable(t *testing.T) {
	want := map[Level][8]string{
		LevelL: {"111011111000100", "111001011110011", "111110110101010", "111100010011101",
			"110011000101111", "110001100011000", "110110001000001", "110100101110110"},
		LevelM: {"101010000010010", "101000100100101", "101111001111100", "101101101001011",
			"100010111111001", "100000011001110", "100111110010111", "100101010100000"},
	}
	for l, masks := range want {
		for k, s := range masks {
			assert.Equal(t, s, fmt.Sprintf("%015b", FormatBits(l, k)), "level %s mask %d", l, k)
		}
	}
}

// Version information strings (annex D).
func TestVersionBitsKnownTable(t *testing.T) {
	for v, hex := range map[int]int{7: 0x07C94, 8: 0x085BC, 9: 0x09A99, 10: 0x0A4D3} {
		assert.Equal(t, hex, VersionBits(v), "version %d", v)
	}
}

// Byte-mode capacities from the standard's table 7.
func TestCapacityKnownTable(t *testing.T) {
	m := []int{14, 26, 42, 62, 84, 106, 122, 152, 180, 213}
	l := []int{17, 32, 53, 78, 106, 134, 154, 192, 230, 271}
	for v := 1; v <= MaxVersion; v++ {
		assert.Equal(t, m[v-1], Capacity(v, LevelM), "version %d-M", v)
		assert.Equal(t, l[v-1], Capacity(v, LevelL), "version %d-L", v)
		b := blocks[v-1]
		total := 0
		for _, lv := range b {
			n := 0
			for _, g := range lv.groups {
				n += g[0] * (g[1] + lv.ec)
			}
			if total == 0 {
				total = n
			}
			assert.Equal(t, total, n, "version %d: both levels fill the same codewords", v)
		}
		// Codewords = (modules - function modules) / 8, per the standard.
		assert.Equal(t, []int{26, 44, 70, 100, 134, 172, 196, 242, 292, 346}[v-1], total, "version %d codewords", v)
	}
}

func TestVersionChoice(t *testing.T) {
	tests := []struct {
		n       int
		version int
		level   Level
	}{
		{1, 1, LevelM}, {14, 1, LevelM}, {15, 2, LevelM}, {100, 6, LevelM}, {122, 7, LevelM},
		{213, 10, LevelM}, {214, 9, LevelL}, {231, 10, LevelL}, {271, 10, LevelL},
	}
	for _, tt := range tests {
		c, err := Encode(bytes.Repeat([]byte("a"), tt.n))
		require.NoError(t, err)
		assert.Equal(t, tt.version, c.Version, "%d bytes", tt.n)
		assert.Equal(t, tt.level, c.Level, "%d bytes", tt.n)
		assert.Equal(t, 17+4*tt.version, c.Size)
	}
	_, err := Encode(bytes.Repeat([]byte("a"), 272))
	assert.ErrorIs(t, err, ErrTooLong)
}

// decode is an independent reader written from the standard's description:
// it checks the finder patterns, reads both format copies (they must agree
// and be valid BCH words), unmasks, reads the zig-zag, de-interleaves,
// checks every block's Reed–Solomon syndromes, and parses byte mode.
func decode(t *testing.T, c *Code) []byte {
	t.Helper()
	n := c.Size
	v := (n - 17) / 4
	at := func(x, y int) bool { return c.Dark(x, y) }
	// Finder: the 7x7 square's rings are dark, light, dark(3x3).
	for _, o := range [][2]int{{0, 0}, {n - 7, 0}, {0, n - 7}} {
		for y := 0; y < 7; y++ {
			for x := 0; x < 7; x++ {
				ring := max(abs(x-3), abs(y-3))
				require.Equal(t, ring != 2, at(o[0]+x, o[1]+y), "finder at %v module %d,%d", o, x, y)
			}
		}
	}
	// Format copy 1: bits 14..9 along row 8 (x=0..5), then (7,8), (8,8),
	// (8,7), then bits 5..0 down column 8 (y=5..0).
	read := func(coords [][2]int) int {
		v := 0
		for _, p := range coords {
			v <<= 1
			if at(p[0], p[1]) {
				v |= 1
			}
		}
		return v
	}
	var c1, c2 [][2]int
	for x := 0; x <= 5; x++ {
		c1 = append(c1, [2]int{x, 8})
	}
	c1 = append(c1, [2]int{7, 8}, [2]int{8, 8}, [2]int{8, 7})
	for y := 5; y >= 0; y-- {
		c1 = append(c1, [2]int{8, y})
	}
	// Copy 2: bits 14..8 up column 8 from the bottom (y=n-1..n-7), bits 7..0
	// along row 8 from x=n-8 to n-1.
	for y := n - 1; y >= n-7; y-- {
		c2 = append(c2, [2]int{8, y})
	}
	for x := n - 8; x < n; x++ {
		c2 = append(c2, [2]int{x, 8})
	}
	f1, f2 := read(c1), read(c2)
	require.Equal(t, f1, f2, "the two format copies agree")
	require.True(t, at(8, n-8), "the dark module")
	// A valid format word: remove the XOR mask, the BCH remainder is 0.
	f := f1 ^ 0x5412
	rem := f
	for i := 14; i >= 10; i-- {
		if rem>>i&1 == 1 {
			rem ^= 0x537 << (i - 10)
		}
	}
	require.Zero(t, rem, "format word %015b is a BCH codeword", f1)
	levelBits, mask := f>>13, f>>10&7
	level := LevelM
	if levelBits == 1 {
		level = LevelL
	} else {
		require.Equal(t, 0, levelBits, "this package writes only L and M")
	}
	require.Equal(t, c.Level, level)
	require.Equal(t, c.Mask, mask)
	if v >= 7 {
		// Version block above the bottom-left finder: 6 columns x 3 rows,
		// bit i at (i/3, n-11+i%3).
		got := 0
		for i := 17; i >= 0; i-- {
			got <<= 1
			if at(i/3, n-11+i%3) {
				got |= 1
			}
		}
		require.Equal(t, v, got>>12, "version information")
	}
	// Which modules are data: not finder+separator+format (the 9x9, 9x8 and
	// 8x9 corners), not timing, not alignment, not version.
	isFn := func(x, y int) bool {
		switch {
		case x <= 8 && y <= 8, x >= n-8 && y <= 8, x <= 8 && y >= n-8:
			return true
		case x == 6 || y == 6:
			return true
		case v >= 7 && ((x >= n-11 && x <= n-9 && y <= 5) || (y >= n-11 && y <= n-9 && x <= 5)):
			return true
		}
		if v >= 2 {
			step := map[int][]int{2: {6, 18}, 3: {6, 22}, 4: {6, 26}, 5: {6, 30}, 6: {6, 34}, 7: {6, 22, 38}, 8: {6, 24, 42}, 9: {6, 26, 46}, 10: {6, 28, 50}}[v]
			for _, ax := range step {
				for _, ay := range step {
					if (ax == 6 && ay == 6) || (ax == 6 && ay == step[len(step)-1]) || (ay == 6 && ax == step[len(step)-1]) {
						continue
					}
					if abs(x-ax) <= 2 && abs(y-ay) <= 2 {
						return true
					}
				}
			}
		}
		return false
	}
	masks := []func(i, j int) bool{ // i = row, j = column, as the standard writes them
		func(i, j int) bool { return (i+j)%2 == 0 },
		func(i, j int) bool { return i%2 == 0 },
		func(i, j int) bool { return j%3 == 0 },
		func(i, j int) bool { return (i+j)%3 == 0 },
		func(i, j int) bool { return (i/2+j/3)%2 == 0 },
		func(i, j int) bool { return (i*j)%2+(i*j)%3 == 0 },
		func(i, j int) bool { return ((i*j)%2+(i*j)%3)%2 == 0 },
		func(i, j int) bool { return ((i*j)%3+(i+j)%2)%2 == 0 },
	}
	var bits []bool
	col := n - 1
	up := true
	for col > 0 {
		if col == 6 {
			col--
		}
		for k := 0; k < n; k++ {
			y := k
			if up {
				y = n - 1 - k
			}
			for _, x := range []int{col, col - 1} {
				if !isFn(x, y) {
					bits = append(bits, at(x, y) != masks[mask](y, x))
				}
			}
		}
		up = !up
		col -= 2
	}
	spec := blocks[v-1][level]
	total := 0
	var sizes []int
	for _, g := range spec.groups {
		for range g[0] {
			sizes = append(sizes, g[1])
			total += g[1] + spec.ec
		}
	}
	require.GreaterOrEqual(t, len(bits), total*8)
	require.Less(t, len(bits)-total*8, 8, "remainder bits")
	cw := make([]byte, total)
	for i := range cw {
		for j := 0; j < 8; j++ {
			if bits[i*8+j] {
				cw[i] |= 1 << (7 - j)
			}
		}
	}
	// De-interleave.
	nb := len(sizes)
	blks := make([][]byte, nb)
	p := 0
	for i := 0; i < sizes[nb-1]; i++ {
		for b := 0; b < nb; b++ {
			if i < sizes[b] {
				blks[b] = append(blks[b], cw[p])
				p++
			}
		}
	}
	for i := 0; i < spec.ec; i++ {
		for b := 0; b < nb; b++ {
			blks[b] = append(blks[b], cw[p])
			p++
		}
	}
	var data []byte
	for b, blk := range blks {
		// Syndromes: the codeword polynomial vanishes at a^0..a^(ec-1).
		for r := 0; r < spec.ec; r++ {
			var s byte
			for _, c := range blk {
				s = gfMul(s, gfExp[r]) ^ c
			}
			require.Zero(t, s, "block %d syndrome %d", b, r)
		}
		data = append(data, blk[:sizes[b]]...)
	}
	// Byte mode: 0100, count, bytes.
	bitAt := func(i int) int { return int(data[i/8]>>(7-i%8)) & 1 }
	get := func(pos, width int) (int, int) {
		v := 0
		for i := 0; i < width; i++ {
			v = v<<1 | bitAt(pos+i)
		}
		return v, pos + width
	}
	mode, pos := get(0, 4)
	require.Equal(t, 0b0100, mode, "byte mode")
	width := 8
	if v >= 10 {
		width = 16
	}
	count, pos := get(pos, width)
	out := make([]byte, count)
	for i := range out {
		var b int
		b, pos = get(pos, 8)
		out[i] = byte(b)
	}
	return out
}

func TestEncodeDecodesBack(t *testing.T) {
	inputs := []string{
		"http://192.168.1.20:8080/join/K7QX4M",
		"",
		"a",
		"http://statelab.local:8080/join/ABCDEF?lang=zh",
		strings.Repeat("0123456789", 10),                   // 100 characters: version 6-M
		"https://example.test/" + strings.Repeat("x", 190), // version 10
		"二进制 UTF-8 文本",
	}
	for _, in := range inputs {
		c, err := Encode([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, in, string(decode(t, c)), "version %d-%s mask %d", c.Version, c.Level, c.Mask)
	}
	// Every mask and every version decode, not only the chosen ones.
	for v := 1; v <= MaxVersion; v++ {
		for k := 0; k < 8; k++ {
			in := fmt.Sprintf("v%d m%d %s", v, k, strings.Repeat("z", Capacity(v, LevelM)-7))
			c, err := EncodeWith([]byte(in), v, LevelM, k)
			require.NoError(t, err)
			assert.Equal(t, in, string(decode(t, c)), "version %d mask %d", v, k)
		}
	}
}

// TestZbarReadsTheCodes hands rendered codes to zbarimg (Debian's
// zbar-tools), a reader that shares no code with this package. Skipped
// without it unless ZBAR=1 (CI sets it once it installs zbar-tools).
func TestZbarReadsTheCodes(t *testing.T) {
	zbar, err := exec.LookPath("zbarimg")
	if err != nil {
		if os.Getenv("ZBAR") == "1" {
			t.Fatal("ZBAR=1 but zbarimg is missing; install it: apt-get install -y --no-install-recommends zbar-tools")
		}
		t.Skip("no zbarimg (apt-get install zbar-tools); set ZBAR=1 to require it")
	}
	dir := t.TempDir()
	for i, in := range []string{
		"http://192.168.1.20:8080/join/K7QX4M",
		"http://10.0.0.7:8080/join/" + strings.Repeat("ABCDEFGH", 12), // ~125 bytes: version 8
		"https://example.test/" + strings.Repeat("q", 190),
	} {
		c, err := Encode([]byte(in))
		require.NoError(t, err)
		p := filepath.Join(dir, fmt.Sprintf("code%d.png", i))
		var buf bytes.Buffer
		require.NoError(t, png.Encode(&buf, c.Image(4)))
		require.NoError(t, os.WriteFile(p, buf.Bytes(), 0o644))
		out, err := exec.Command(zbar, "--raw", "-q", "-Sdisable", "-Sqrcode.enable", p).Output()
		require.NoError(t, err, "zbarimg read version %d-%s", c.Version, c.Level)
		assert.Equal(t, in, strings.TrimRight(string(out), "\n"), "version %d-%s mask %d", c.Version, c.Level, c.Mask)
	}
}

func TestSVG(t *testing.T) {
	c, err := Encode([]byte("http://127.0.0.1:8080/join/ABC234"))
	require.NoError(t, err)
	svg := c.SVG(8)
	full := c.Size + 2*QuietZone
	assert.True(t, strings.HasPrefix(svg, `<svg xmlns="http://www.w3.org/2000/svg"`))
	assert.Contains(t, svg, fmt.Sprintf(`viewBox="0 0 %d %d"`, full, full))
	assert.Contains(t, svg, fmt.Sprintf(`width="%d"`, full*8))
	// The top-left finder's first row is one run of seven dark modules.
	assert.Contains(t, svg, "M4 4h7v1h-7z")
	assert.True(t, strings.HasSuffix(svg, "</svg>"))
}
