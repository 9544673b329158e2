// Package docs embeds the parts of StateLab's documentation the app shows
// itself: the committed results of `statelab bench` in docs/bench
// (bench.json, peers.json and the SVG charts), which the web app's
// Performance page draws.
//
// Why embed them from here rather than copy them into static/: these files
// are the output of `statelab bench --out docs/bench`, and docs/benchmarks.md
// quotes them. Embedding them where they are written keeps one copy, so the
// page can never show figures that differ from the documentation, and a new
// full run reaches the page by being committed, with no copy step to forget.
//
// The package imports only embed, so it sits below every other package and
// any of them (web, in practice) may use it.
//
// Contract:
//
//  1. Bench is read-only and rooted at this directory: paths are
//     "bench/bench.json", "bench/ratios.svg", …
//  2. The set of files is whatever the last committed run wrote; a reader
//     lists the directory rather than assuming names, and treats a missing
//     bench.json as "no committed results".
package docs

import "embed"

// Bench holds docs/bench: bench.json, peers.json and the charts.
//
//go:embed bench
var Bench embed.FS

// Teaching holds the instructor's guide, teaching.md and teaching.zh.md,
// which the web app also serves as a page (/teaching): one copy, the
// documentation's.
//
//go:embed teaching.md teaching.zh.md
var Teaching embed.FS
