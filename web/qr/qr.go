package qr

import (
	"errors"
	"fmt"
	"image"
	"image/color"
	"strings"
)

// Level is an error-correction level.
type Level int

// Levels this package writes: L recovers about 7% of the symbol, M about 15%.
const (
	LevelM Level = iota
	LevelL
)

func (l Level) String() string {
	if l == LevelL {
		return "L"
	}
	return "M"
}

// formatBits are the two level bits of the format information (L=01, M=00).
func (l Level) formatBits() int {
	if l == LevelL {
		return 1
	}
	return 0
}

// MaxVersion is the largest version Encode draws.
const MaxVersion = 10

// ErrTooLong is returned when the data does not fit in MaxVersion at level L.
var ErrTooLong = errors.New("qr: data too long")

// blockSpec is one version and level's codeword structure (the standard's
// table 9): ec codewords per block, then groups of (blocks, data codewords).
type blockSpec struct {
	ec     int
	groups [2][2]int
}

// blocks[version-1][level] for versions 1..10; level 0 = M, 1 = L.
var blocks = [MaxVersion][2]blockSpec{
	{{10, [2][2]int{{1, 16}}}, {7, [2][2]int{{1, 19}}}},
	{{16, [2][2]int{{1, 28}}}, {10, [2][2]int{{1, 34}}}},
	{{26, [2][2]int{{1, 44}}}, {15, [2][2]int{{1, 55}}}},
	{{18, [2][2]int{{2, 32}}}, {20, [2][2]int{{1, 80}}}},
	{{24, [2][2]int{{2, 43}}}, {26, [2][2]int{{1, 108}}}},
	{{16, [2][2]int{{4, 27}}}, {18, [2][2]int{{2, 68}}}},
	{{18, [2][2]int{{4, 31}}}, {20, [2][2]int{{2, 78}}}},
	{{22, [2][2]int{{2, 38}, {2, 39}}}, {24, [2][2]int{{2, 97}}}},
	{{22, [2][2]int{{3, 36}, {2, 37}}}, {30, [2][2]int{{2, 116}}}},
	{{26, [2][2]int{{4, 43}, {1, 44}}}, {18, [2][2]int{{2, 68}, {2, 69}}}},
}

// alignment lists the alignment pattern centre coordinates per version.
var alignment = [MaxVersion][]int{
	nil, {6, 18}, {6, 22}, {6, 26}, {6, 30}, {6, 34}, {6, 22, 38}, {6, 24, 42}, {6, 26, 46}, {6, 28, 50},
}

func dataCodewords(version int, l Level) int {
	b := blocks[version-1][l]
	return b.groups[0][0]*b.groups[0][1] + b.groups[1][0]*b.groups[1][1]
}

// countBits is the width of the byte-mode character count.
func countBits(version int) int {
	if version <= 9 {
		return 8
	}
	return 16
}

// Capacity is how many bytes version holds at level l in byte mode.
func Capacity(version int, l Level) int {
	return (dataCodewords(version, l)*8 - 4 - countBits(version)) / 8
}

// Code is a finished QR symbol.
type Code struct {
	Version int
	Level   Level
	Mask    int
	Size    int
	mods    []bool // row-major, true = dark
}

// Dark reports whether the module at column x, row y is dark.
func (c *Code) Dark(x, y int) bool { return c.mods[y*c.Size+x] }

// Encode returns the QR code of data in byte mode: level M in the smallest
// version that holds it, else level L.
func Encode(data []byte) (*Code, error) {
	for _, l := range []Level{LevelM, LevelL} {
		for v := 1; v <= MaxVersion; v++ {
			if len(data) <= Capacity(v, l) {
				return EncodeWith(data, v, l, -1)
			}
		}
	}
	return nil, fmt.Errorf("%w: %d bytes; at most %d fit (version %d, level L)", ErrTooLong, len(data), Capacity(MaxVersion, LevelL), MaxVersion)
}

// EncodeWith draws data at the given version and level; mask -1 chooses the
// mask with the lowest penalty, 0..7 forces one (for tests).
func EncodeWith(data []byte, version int, l Level, mask int) (*Code, error) {
	if version < 1 || version > MaxVersion {
		return nil, fmt.Errorf("qr: version %d is outside 1..%d", version, MaxVersion)
	}
	if len(data) > Capacity(version, l) {
		return nil, fmt.Errorf("%w: %d bytes do not fit version %d-%s (capacity %d)", ErrTooLong, len(data), version, l, Capacity(version, l))
	}
	if mask < -1 || mask > 7 {
		return nil, fmt.Errorf("qr: mask %d is outside 0..7", mask)
	}
	cw := interleave(codewords(data, version, l), version, l)
	m := newMatrix(version)
	m.drawFunctionPatterns(version)
	m.drawCodewords(cw)
	best, bestScore := mask, -1
	if mask < 0 {
		for k := 0; k < 8; k++ {
			m.applyMask(k)
			m.drawFormat(l, k)
			if s := m.penalty(); bestScore < 0 || s < bestScore {
				best, bestScore = k, s
			}
			m.applyMask(k) // masking is its own inverse
		}
	}
	m.applyMask(best)
	m.drawFormat(l, best)
	return &Code{Version: version, Level: l, Mask: best, Size: m.size, mods: m.dark}, nil
}

// bitBuffer accumulates bits most significant first.
type bitBuffer struct {
	bits []bool
}

func (b *bitBuffer) put(v, n int) {
	for i := n - 1; i >= 0; i-- {
		b.bits = append(b.bits, v>>i&1 == 1)
	}
}

// codewords returns the data codewords: mode, count, bytes, terminator,
// padding to a byte, then pad codewords.
func codewords(data []byte, version int, l Level) []byte {
	capBits := dataCodewords(version, l) * 8
	var b bitBuffer
	b.put(0b0100, 4)
	b.put(len(data), countBits(version))
	for _, c := range data {
		b.put(int(c), 8)
	}
	b.put(0, min(4, capBits-len(b.bits)))
	for len(b.bits)%8 != 0 {
		b.bits = append(b.bits, false)
	}
	out := make([]byte, 0, capBits/8)
	for i := 0; i < len(b.bits); i += 8 {
		var v byte
		for j := 0; j < 8; j++ {
			if b.bits[i+j] {
				v |= 1 << (7 - j)
			}
		}
		out = append(out, v)
	}
	for pad := byte(0xEC); len(out) < capBits/8; pad ^= 0xEC ^ 0x11 {
		out = append(out, pad)
	}
	return out
}

// interleave splits data into blocks, adds each block's error correction,
// and interleaves data then error correction codewords.
func interleave(data []byte, version int, l Level) []byte {
	spec := blocks[version-1][l]
	gen := generator(spec.ec)
	var dataBlocks, ecBlocks [][]byte
	off := 0
	for _, g := range spec.groups {
		for range g[0] {
			blk := data[off : off+g[1]]
			off += g[1]
			dataBlocks = append(dataBlocks, blk)
			ecBlocks = append(ecBlocks, rsRemainder(blk, gen))
		}
	}
	var out []byte
	for i := 0; ; i++ {
		any := false
		for _, blk := range dataBlocks {
			if i < len(blk) {
				out = append(out, blk[i])
				any = true
			}
		}
		if !any {
			break
		}
	}
	for i := 0; i < spec.ec; i++ {
		for _, blk := range ecBlocks {
			out = append(out, blk[i])
		}
	}
	return out
}

// GF(256) with the QR polynomial x^8+x^4+x^3+x^2+1 (0x11D).
var gfExp, gfLog = func() (exp [512]byte, log [256]byte) {
	x := 1
	for i := 0; i < 255; i++ {
		exp[i] = byte(x)
		log[x] = byte(i)
		x <<= 1
		if x&0x100 != 0 {
			x ^= 0x11D
		}
	}
	for i := 255; i < 512; i++ {
		exp[i] = exp[i-255]
	}
	return exp, log
}()

func gfMul(a, b byte) byte {
	if a == 0 || b == 0 {
		return 0
	}
	return gfExp[int(gfLog[a])+int(gfLog[b])]
}

// generator returns the coefficients of prod_{i<n} (x - a^i), highest
// degree first, without the leading 1.
func generator(n int) []byte {
	g := []byte{1}
	for i := 0; i < n; i++ {
		next := make([]byte, len(g)+1)
		for j, c := range g {
			next[j] ^= c
			next[j+1] ^= gfMul(c, gfExp[i])
		}
		g = next
	}
	return g[1:]
}

// rsRemainder returns the n error correction codewords of data.
func rsRemainder(data, gen []byte) []byte {
	rem := make([]byte, len(gen))
	for _, d := range data {
		factor := d ^ rem[0]
		copy(rem, rem[1:])
		rem[len(rem)-1] = 0
		for i, g := range gen {
			rem[i] ^= gfMul(g, factor)
		}
	}
	return rem
}

// matrix is a symbol being drawn.
type matrix struct {
	size int
	dark []bool
	fn   []bool // function modules: never data, never masked
}

func newMatrix(version int) *matrix {
	n := 17 + 4*version
	return &matrix{size: n, dark: make([]bool, n*n), fn: make([]bool, n*n)}
}

func (m *matrix) setFn(x, y int, dark bool) {
	m.dark[y*m.size+x] = dark
	m.fn[y*m.size+x] = true
}

func (m *matrix) drawFunctionPatterns(version int) {
	n := m.size
	for i := 0; i < n; i++ {
		m.setFn(6, i, i%2 == 0)
		m.setFn(i, 6, i%2 == 0)
	}
	m.finder(3, 3)
	m.finder(n-4, 3)
	m.finder(3, n-4)
	pos := alignment[version-1]
	for i, ax := range pos {
		for j, ay := range pos {
			// Skip the three corners the finders occupy.
			if (i == 0 && j == 0) || (i == 0 && j == len(pos)-1) || (i == len(pos)-1 && j == 0) {
				continue
			}
			for dy := -2; dy <= 2; dy++ {
				for dx := -2; dx <= 2; dx++ {
					m.setFn(ax+dx, ay+dy, max(abs(dx), abs(dy)) != 1)
				}
			}
		}
	}
	// Reserve the format areas now (drawn after masking), and draw the
	// version information, which does not depend on the mask.
	m.drawFormat(LevelM, 0)
	if version >= 7 {
		bits := VersionBits(version)
		for i := 0; i < 18; i++ {
			dark := bits>>i&1 == 1
			a, b := n-11+i%3, i/3
			m.setFn(a, b, dark)
			m.setFn(b, a, dark)
		}
	}
}

// finder draws a finder pattern centred on (cx, cy) with its separator.
func (m *matrix) finder(cx, cy int) {
	for dy := -4; dy <= 4; dy++ {
		for dx := -4; dx <= 4; dx++ {
			x, y := cx+dx, cy+dy
			if x < 0 || y < 0 || x >= m.size || y >= m.size {
				continue
			}
			d := max(abs(dx), abs(dy))
			m.setFn(x, y, d != 2 && d != 4)
		}
	}
}

// FormatBits returns the 15 format information bits of level l and mask
// (BCH(15,5) with generator 0x537, XOR 0x5412).
func FormatBits(l Level, mask int) int {
	data := l.formatBits()<<3 | mask
	rem := data
	for i := 0; i < 10; i++ {
		rem = rem<<1 ^ (rem>>9)*0x537
	}
	return (data<<10 | rem) ^ 0x5412
}

// VersionBits returns the 18 version information bits (BCH(18,6) with
// generator 0x1F25), drawn from version 7 on.
func VersionBits(version int) int {
	rem := version
	for i := 0; i < 12; i++ {
		rem = rem<<1 ^ (rem>>11)*0x1F25
	}
	return version<<12 | rem
}

func (m *matrix) drawFormat(l Level, mask int) {
	bits := FormatBits(l, mask)
	n := m.size
	bit := func(i int) bool { return bits>>i&1 == 1 }
	// First copy, around the top-left finder.
	for i := 0; i <= 5; i++ {
		m.setFn(8, i, bit(i))
	}
	m.setFn(8, 7, bit(6))
	m.setFn(8, 8, bit(7))
	m.setFn(7, 8, bit(8))
	for i := 9; i < 15; i++ {
		m.setFn(14-i, 8, bit(i))
	}
	// Second copy, split between the other two finders.
	for i := 0; i < 8; i++ {
		m.setFn(n-1-i, 8, bit(i))
	}
	for i := 8; i < 15; i++ {
		m.setFn(8, n-15+i, bit(i))
	}
	m.setFn(8, n-8, true) // the dark module
}

// drawCodewords places the codewords in the zig-zag order: two-module
// columns from the right, upwards then downwards, skipping the vertical
// timing pattern and function modules.
func (m *matrix) drawCodewords(cw []byte) {
	n := m.size
	i := 0
	for right := n - 1; right >= 1; right -= 2 {
		if right == 6 {
			right = 5
		}
		for vert := 0; vert < n; vert++ {
			for j := 0; j < 2; j++ {
				x := right - j
				upward := (right+1)&2 == 0
				y := vert
				if upward {
					y = n - 1 - vert
				}
				if m.fn[y*n+x] {
					continue
				}
				if i < len(cw)*8 {
					m.dark[y*n+x] = cw[i>>3]>>(7-i&7)&1 == 1
					i++
				}
				// Remainder bits stay light.
			}
		}
	}
}

// maskFn reports whether mask k inverts the module at row y, column x.
func maskFn(k, x, y int) bool {
	switch k {
	case 0:
		return (y+x)%2 == 0
	case 1:
		return y%2 == 0
	case 2:
		return x%3 == 0
	case 3:
		return (y+x)%3 == 0
	case 4:
		return (y/2+x/3)%2 == 0
	case 5:
		return y*x%2+y*x%3 == 0
	case 6:
		return (y*x%2+y*x%3)%2 == 0
	default:
		return ((y+x)%2+y*x%3)%2 == 0
	}
}

func (m *matrix) applyMask(k int) {
	n := m.size
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			if !m.fn[y*n+x] && maskFn(k, x, y) {
				m.dark[y*n+x] = !m.dark[y*n+x]
			}
		}
	}
}

// penalty scores a masked symbol by the standard's four rules: runs of
// five or more, 2×2 blocks, finder-like 1:1:3:1:1 patterns with four light
// modules beside them, and imbalance of dark and light.
func (m *matrix) penalty() int {
	n := m.size
	score := 0
	at := func(x, y int) bool { return m.dark[y*n+x] }
	line := func(get func(i int) bool) {
		run := 1
		for i := 1; i < n; i++ {
			if get(i) == get(i-1) {
				run++
				continue
			}
			if run >= 5 {
				score += 3 + run - 5
			}
			run = 1
		}
		if run >= 5 {
			score += 3 + run - 5
		}
		// 1:1:3:1:1 dark-light-dark-dark-dark-light-dark with four light
		// modules on either side (outside the symbol counts as light).
		lightAt := func(i int) bool { return i < 0 || i >= n || !get(i) }
		for i := 0; i+6 < n; i++ {
			if get(i) && !get(i+1) && get(i+2) && get(i+3) && get(i+4) && !get(i+5) && get(i+6) {
				before, after := true, true
				for k := 1; k <= 4; k++ {
					before = before && lightAt(i-k)
					after = after && lightAt(i+6+k)
				}
				if before {
					score += 40
				}
				if after {
					score += 40
				}
			}
		}
	}
	for y := 0; y < n; y++ {
		line(func(i int) bool { return at(i, y) })
	}
	for x := 0; x < n; x++ {
		line(func(i int) bool { return at(x, i) })
	}
	dark := 0
	for y := 0; y < n; y++ {
		for x := 0; x < n; x++ {
			if at(x, y) {
				dark++
			}
			if x+1 < n && y+1 < n {
				c := at(x, y)
				if at(x+1, y) == c && at(x, y+1) == c && at(x+1, y+1) == c {
					score += 3
				}
			}
		}
	}
	total := n * n
	// 10 points per full 5% step away from half dark.
	dev := abs(dark*20 - total*10)
	score += dev / total * 10
	return score
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// QuietZone is the light border the standard asks for, in modules.
const QuietZone = 4

// SVG renders the code as a standalone SVG document, scale pixels per
// module (its width and height; the viewBox is in modules), with the quiet
// zone. Dark modules are one path, so the file stays small.
func (c *Code) SVG(scale int) string {
	if scale < 1 {
		scale = 1
	}
	full := c.Size + 2*QuietZone
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" shape-rendering="crispEdges">`, full*scale, full*scale, full, full)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#fff"/><path fill="#000" d="`, full, full)
	for y := 0; y < c.Size; y++ {
		for x := 0; x < c.Size; x++ {
			if c.Dark(x, y) {
				// A run of dark modules on a row is one rectangle.
				run := 1
				for x+run < c.Size && c.Dark(x+run, y) {
					run++
				}
				fmt.Fprintf(&b, "M%d %dh%dv1h-%dz", x+QuietZone, y+QuietZone, run, run)
				x += run - 1
			}
		}
	}
	b.WriteString(`"/></svg>`)
	return b.String()
}

// Image renders the code as a grey image, scale pixels per module, with the
// quiet zone (for tests and PNG export).
func (c *Code) Image(scale int) *image.Gray {
	full := (c.Size + 2*QuietZone) * scale
	img := image.NewGray(image.Rect(0, 0, full, full))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	for y := 0; y < c.Size; y++ {
		for x := 0; x < c.Size; x++ {
			if !c.Dark(x, y) {
				continue
			}
			for dy := 0; dy < scale; dy++ {
				for dx := 0; dx < scale; dx++ {
					img.SetGray((x+QuietZone)*scale+dx, (y+QuietZone)*scale+dy, color.Gray{})
				}
			}
		}
	}
	return img
}
