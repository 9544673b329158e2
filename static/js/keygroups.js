// Flink's key-group arithmetic, bit for bit, for the key -> key group box.
// The server's rescale package is the reference; the browser test checks
// these functions against vectors produced on a JVM.

// javaStringHashCode is java.lang.String#hashCode over UTF-16 code units,
// which is what charCodeAt returns: h = 31*h + unit, wrapping at 32 bits.
export function javaStringHashCode(s) {
  let h = 0;
  for (let i = 0; i < s.length; i++) {
    h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  }
  return h;
}

function rotl(x, r) {
  return (x << r) | (x >>> (32 - r));
}

function bitMix(x) {
  x ^= x >>> 16;
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  x ^= x >>> 16;
  return x | 0;
}

// murmurHash is Flink's MathUtils.murmurHash(int): one round of
// MurmurHash3's body and finaliser, made non-negative.
export function murmurHash(code) {
  code = Math.imul(code | 0, 0xcc9e2d51);
  code = rotl(code, 15);
  code = Math.imul(code, 0x1b873593);
  code = rotl(code, 13);
  code = (Math.imul(code, 5) + 0xe6546b64) | 0;
  code ^= 4;
  code = bitMix(code);
  if (code >= 0) return code;
  if (code !== -2147483648) return -code;
  return 0;
}

// keyGroupFor is KeyGroupRangeAssignment.assignToKeyGroup for a String key.
export function keyGroupFor(key, maxParallelism) {
  return murmurHash(javaStringHashCode(key)) % maxParallelism;
}

// operatorIndexFor is computeOperatorIndexForKeyGroup.
export function operatorIndexFor(maxParallelism, parallelism, keyGroup) {
  return Math.floor((keyGroup * parallelism) / maxParallelism);
}

// rangeFor is computeKeyGroupRangeForOperatorIndex (inclusive bounds).
export function rangeFor(maxParallelism, parallelism, index) {
  return {
    start: Math.floor((index * maxParallelism + parallelism - 1) / parallelism),
    end: Math.floor(((index + 1) * maxParallelism - 1) / parallelism),
  };
}
