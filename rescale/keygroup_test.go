package rescale

import (
	"bufio"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hash codes worked out by hand from Java's definitions.
func TestJavaHashCodes(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want int32
	}{
		{"", 0},
		{"a", 97},
		{"ab", 97*31 + 98},
		{"hello", 99162322}, // the value every Java tutorial prints
		// "状态" is U+72B6 U+6001: 0x72B6*31 + 0x6001
		{"状态", 0x72B6*31 + 0x6001},
		// U+1F600 is the surrogate pair D83D DE00 in UTF-16: two units
		{"😀", 0xD83D*31 + 0xDE00},
		// Invalid UTF-8 reads as U+FFFD
		{"\xff", 0xFFFD},
		// "Aa" and "BB" collide in Java
		{"Aa", 2112},
		{"BB", 2112},
	} {
		assert.Equal(t, tc.want, JavaStringHashCode(tc.key), "hashCode(%q)", tc.key)
	}
	// int32 wrap-around: "polygenelubricants".hashCode() == Integer.MIN_VALUE
	assert.Equal(t, int32(-1<<31), JavaStringHashCode("polygenelubricants"))

	assert.Equal(t, int32(-5), JavaIntHashCode(-5))
	for _, tc := range []struct {
		v    int64
		want int32
	}{
		{0, 0}, {1, 1}, {-1, 0}, // 0xFFFFFFFF ^ 0xFFFFFFFF
		{1 << 32, 1},
		{-1 << 63, -1 << 31}, // 0x80000000_00000000 -> low 0 ^ high 0x80000000
		{1<<63 - 1, -1 << 31},
	} {
		assert.Equal(t, tc.want, JavaLongHashCode(tc.v), "Long.hashCode(%d)", tc.v)
	}
}

func TestMurmurHashIsNonNegative(t *testing.T) {
	for _, c := range []int32{0, 1, -1, 1<<31 - 1, -1 << 31, 99162322} {
		assert.GreaterOrEqual(t, MurmurHash(c), int32(0))
	}
}

// The blog article's example: max parallelism 10, parallelism 2 -> 3.
func TestArticleExampleMaxParallelism10(t *testing.T) {
	// Flink: start = ceil(i*10/p), end = floor(((i+1)*10-1)/p)
	assert.Equal(t, []KeyGroupRange{{0, 4}, {5, 9}}, KeyGroupRanges(10, 2))
	assert.Equal(t, []KeyGroupRange{{0, 3}, {4, 6}, {7, 9}}, KeyGroupRanges(10, 3))
	p, err := NewPlan(10, 2, 3)
	require.NoError(t, err)
	assert.Equal(t, []int{4, 7, 8, 9}, p.Moved)
	assert.Equal(t, KeyGroupMove{KeyGroup: 4, From: 0, To: 1}, p.KeyGroups[4])
	assert.Equal(t, []Read{{OldSubtask: 0, Range: KeyGroupRange{4, 4}}, {OldSubtask: 1, Range: KeyGroupRange{5, 6}}}, p.Subtasks[1].Reads)
	assert.Equal(t, []Read{{OldSubtask: 1, Range: KeyGroupRange{7, 9}}}, p.Subtasks[2].Reads)
}

func TestDefaultMaxParallelism(t *testing.T) {
	for _, tc := range []struct{ p, want int }{
		{1, 128}, {85, 128}, // 85+42=127 -> 128
		{86, 256}, // 86+43=129 -> 256
		{1000, 2048}, {21845, 32768}, {21846, 32768}, {32768, 32768},
	} {
		assert.Equal(t, tc.want, DefaultMaxParallelism(tc.p), "p=%d", tc.p)
	}
}

func TestBounds(t *testing.T) {
	require.NoError(t, CheckParallelism(1, 1))
	require.NoError(t, CheckParallelism(32768, 32768))
	for _, tc := range []struct {
		p, max int
		err    error
		says   string
	}{
		{0, 128, ErrParallelism, "parallelism 0 is not within 1..32768"},
		{32769, 32768, ErrParallelism, "32769"},
		{2, 0, ErrMaxParallelism, "max parallelism 0"},
		{2, 32769, ErrMaxParallelism, "32769"},
		{129, 128, ErrAboveMax, "parallelism 129 is above max parallelism 128"},
	} {
		err := CheckParallelism(tc.p, tc.max)
		require.ErrorIs(t, err, tc.err)
		assert.Contains(t, err.Error(), tc.says)
	}
}

// Properties over many (max, p): one owner per key group, contiguous ranges
// covering [0, max), owners agree with ranges.
func TestRangeProperties(t *testing.T) {
	for _, max := range []int{1, 2, 3, 7, 10, 127, 128, 129, 1000, 4096} {
		for p := 1; p <= max && p <= 40; p++ {
			rs := KeyGroupRanges(max, p)
			next := 0
			for i, r := range rs {
				require.Equal(t, next, r.Start, "max=%d p=%d subtask %d starts where the previous ended", max, p, i)
				require.False(t, r.Empty(), "max=%d p=%d: p <= max gives every subtask a key group", max, p)
				for g := r.Start; g <= r.End; g++ {
					require.Equal(t, i, OperatorIndexForKeyGroup(max, p, g), "max=%d p=%d group %d", max, p, g)
				}
				next = r.End + 1
			}
			require.Equal(t, max, next, "ranges cover [0, max)")
		}
	}
}

func TestKeyGroupRange(t *testing.T) {
	r := NewKeyGroupRange(3, 7)
	assert.Equal(t, 5, r.Len())
	assert.True(t, r.Contains(3) && r.Contains(7) && !r.Contains(8))
	assert.Equal(t, KeyGroupRange{5, 7}, r.Intersection(KeyGroupRange{5, 20}))
	assert.True(t, r.Intersection(KeyGroupRange{8, 9}).Empty())
	assert.Equal(t, EmptyKeyGroupRange, NewKeyGroupRange(4, 2))
	assert.Equal(t, "[]", EmptyKeyGroupRange.String())
}

// Held-out vectors written on a JVM (testdata/flinkgen/FlinkVectors.java):
// real java.lang hashCode, Flink's key-group formulas transcribed there.
func TestFlinkKeyGroupVectors(t *testing.T) {
	f, err := os.Open("testdata/flink_keygroups.txt")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		require.Len(t, fs, 7, line)
		max, p := atoi(t, fs[2]), atoi(t, fs[3])
		wantHash, wantGroup, wantIdx := int32(atoi(t, fs[4])), atoi(t, fs[5]), atoi(t, fs[6])
		var hash int32
		switch fs[0] {
		case "string":
			key := ""
			if fs[1] != "-" {
				b, err := hex.DecodeString(fs[1])
				require.NoError(t, err)
				key = string(b)
			}
			hash = JavaStringHashCode(key)
			assert.Equal(t, wantGroup, KeyGroupForString(key, max), line)
		case "int":
			v, err := strconv.ParseInt(fs[1], 10, 32)
			require.NoError(t, err)
			hash = JavaIntHashCode(int32(v))
			assert.Equal(t, wantGroup, KeyGroupForInt(int32(v), max), line)
		case "long":
			v, err := strconv.ParseInt(fs[1], 10, 64)
			require.NoError(t, err)
			hash = JavaLongHashCode(v)
			assert.Equal(t, wantGroup, KeyGroupForLong(v, max), line)
		}
		require.Equal(t, wantHash, hash, line)
		g := KeyGroupForKeyHash(hash, max)
		require.Equal(t, wantGroup, g, line)
		require.Equal(t, wantIdx, OperatorIndexForKeyGroup(max, p, g), line)
		require.True(t, KeyGroupRangeForOperator(max, p, wantIdx).Contains(g), line)
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 3000)
}

func TestFlinkRangeVectors(t *testing.T) {
	data, err := os.ReadFile("testdata/flink_ranges.txt")
	require.NoError(t, err)
	ranges, defaults := 0, 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if fs[0] == "default" {
			assert.Equal(t, atoi(t, fs[2]), DefaultMaxParallelism(atoi(t, fs[1])), line)
			defaults++
			continue
		}
		got := KeyGroupRangeForOperator(atoi(t, fs[0]), atoi(t, fs[1]), atoi(t, fs[2]))
		assert.Equal(t, KeyGroupRange{atoi(t, fs[3]), atoi(t, fs[4])}, got, line)
		ranges++
	}
	require.Greater(t, ranges, 1000)
	require.Greater(t, defaults, 100)
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	require.NoError(t, err)
	return v
}

func FuzzKeyGroup(f *testing.F) {
	f.Add("user-42", 128, 3)
	f.Add("😀状态", 10, 2)
	f.Add("", 32768, 32768)
	f.Fuzz(func(t *testing.T, key string, max, p int) {
		if max < 1 || max > UpperBoundMaxParallelism || p < 1 || p > max {
			if CheckParallelism(p, max) == nil {
				t.Fatalf("CheckParallelism(%d, %d) accepted bad bounds", p, max)
			}
			return
		}
		g := KeyGroupForString(key, max)
		if g < 0 || g >= max {
			t.Fatalf("key group %d outside [0, %d)", g, max)
		}
		idx := OperatorIndexForKeyGroup(max, p, g)
		if idx < 0 || idx >= p {
			t.Fatalf("operator index %d outside [0, %d)", idx, p)
		}
		if !KeyGroupRangeForOperator(max, p, idx).Contains(g) {
			t.Fatalf("key group %d not in the range of its subtask %d", g, idx)
		}
		// Same characters, same hash, however the string was built.
		if JavaStringHashCode(string([]rune(key))) != JavaStringHashCode(key) && isValidUTF8(key) {
			t.Fatalf("hash depends on representation")
		}
	})
}

func isValidUTF8(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

func BenchmarkKeyGroup(b *testing.B) {
	keys := make([]string, 1024)
	for i := range keys {
		// 8–32 bytes
		keys[i] = ("user-" + strconv.Itoa(i*7919) + "-session-0123456789abcdef")[:8+i%25]
	}
	b.ResetTimer()
	sum := 0
	for i := 0; i < b.N; i++ {
		sum += KeyGroupForString(keys[i&1023], 128)
	}
	if sum < 0 {
		b.Fatal(sum)
	}
}
