package rescale

import "unicode/utf8"

// JavaStringHashCode returns java.lang.String.hashCode() of s, read as UTF-8:
// h = 31*h + c over the string's UTF-16 code units, with int32 wrap-around.
// A character outside the Basic Multilingual Plane is two code units (a
// surrogate pair), exactly as Java stores it. Bytes that are not valid UTF-8
// count as U+FFFD, the character Java's decoder substitutes for them.
func JavaStringHashCode(s string) int32 {
	var h int32
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf { // ASCII fast path: one byte, one code unit
			h = 31*h + int32(c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r >= 0x10000 {
			r -= 0x10000
			h = 31*h + int32(0xD800+(r>>10))
			h = 31*h + int32(0xDC00+(r&0x3FF))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

// JavaIntHashCode returns java.lang.Integer.hashCode(v): the value itself.
func JavaIntHashCode(v int32) int32 { return v }

// JavaLongHashCode returns java.lang.Long.hashCode(v): (int)(v ^ (v >>> 32)).
func JavaLongHashCode(v int64) int32 {
	u := uint64(v)
	return int32(uint32(u ^ (u >> 32)))
}

// MurmurHash is Flink's MathUtils.murmurHash(int): one round of Murmur3's
// 32-bit mixing of code, finalised, and made non-negative (Integer.MIN_VALUE
// maps to 0, every other negative result to its negation).
func MurmurHash(code int32) int32 {
	k := uint32(code)
	k *= 0xcc9e2d51
	k = k<<15 | k>>17
	k *= 0x1b873593
	k = k<<13 | k>>19
	k = k*5 + 0xe6546b64
	k ^= 4
	k = bitMix(k)
	c := int32(k)
	switch {
	case c >= 0:
		return c
	case c != -1<<31:
		return -c
	default:
		return 0
	}
}

// bitMix is MathUtils.bitMix, Murmur3's finaliser.
func bitMix(in uint32) uint32 {
	in ^= in >> 16
	in *= 0x85ebca6b
	in ^= in >> 13
	in *= 0xc2b2ae35
	in ^= in >> 16
	return in
}
