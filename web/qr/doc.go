// Package qr draws QR codes (ISO/IEC 18004) for StateLab's classroom join
// links, locally and without a dependency: byte mode, error correction
// level M (L when M does not fit), versions 1 to 10 — enough for a URL of
// up to 213 bytes at level M, 271 at level L.
//
// Main types:
//
//   - Code: a finished symbol, Size×Size modules; Dark(x, y) reads one.
//   - Encode(data) picks the smallest version and the mask with the
//     lowest penalty score (the standard's four rules).
//   - Code.SVG(scale) renders it with the four-module quiet zone, as one
//     path of unit squares, for an <img> or inline use.
//
// Contract:
//
//  1. Call Encode with the bytes to carry (a URL). It returns ErrTooLong
//     when they do not fit in version 10 at level L.
//  2. Read the result with Dark or render it with SVG or Image; a Code is
//     immutable and safe to share.
//
// The steps follow the standard: data bits (mode 0100, character count,
// bytes, terminator, pad codewords 0xEC 0x11), Reed–Solomon error
// correction over GF(256) with the polynomial 0x11D per block, interleaving,
// function patterns (finders, separators, timing, alignment, dark module,
// format and version information), zig-zag placement, masking.
package qr
