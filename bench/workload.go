package bench

import (
	"fmt"
	"sort"
	"strconv"
)

// Workload is the keyed count every case and every peer runs: Records words
// drawn from Keys distinct words with a quadratic skew (a few words are hot,
// as in real text), fixed by Seed. The same Workload gives the same words in
// the same order on every run and in every system, so counts can be checked
// against one ground truth.
type Workload struct {
	Seed    int64 `json:"seed"`
	Records int   `json:"records"`
	Keys    int   `json:"keys"`
}

// Validate reports a workload that cannot run.
func (w Workload) Validate() error {
	switch {
	case w.Records < 1:
		return fmt.Errorf("bench: workload needs at least one record (got %d)", w.Records)
	case w.Keys < 1:
		return fmt.Errorf("bench: workload needs at least one key (got %d)", w.Keys)
	}
	return nil
}

// KeyName is the word for key index i. Names are short and distinct, as the
// words of a text are.
func KeyName(i int) string { return "w" + strconv.Itoa(i) }

// Words returns the workload's words in order. The strings are shared with a
// table of Keys names, so a few million records cost 16 bytes each.
func (w Workload) Words() []string {
	names := make([]string, w.Keys)
	for i := range names {
		names[i] = KeyName(i)
	}
	out := make([]string, w.Records)
	seed := splitmix(uint64(w.Seed))
	for i := range out {
		out[i] = names[skewed(splitmix(seed^uint64(i)), w.Keys)]
	}
	return out
}

// skewed maps a random 64-bit value to 0..n-1 with a quadratic skew: with u
// uniform in [0,1), key k = floor(u²·n) has probability √((k+1)/n) − √(k/n),
// so key 0 is the hottest and the tail is long.
func skewed(h uint64, n int) int {
	u := float64(h>>11) / float64(1<<53)
	return int(u * u * float64(n))
}

// splitmix is SplitMix64's finaliser: a cheap, well-mixed hash of x.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Count is the ground truth: a plain sequential count per word.
func Count(words []string) map[string]int64 {
	m := make(map[string]int64)
	for _, w := range words {
		m[w]++
	}
	return m
}

// DiffCounts returns nil when got equals want, else an error naming how many
// keys differ and the first few (in key order), so a wrong peer is caught
// before it is timed.
func DiffCounts(got, want map[string]int64) error {
	var bad []string
	for k, v := range want {
		if got[k] != v {
			bad = append(bad, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	show := bad
	if len(show) > 3 {
		show = show[:3]
	}
	s := ""
	for i, k := range show {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s: got %d want %d", k, got[k], want[k])
	}
	return fmt.Errorf("bench: counts differ at %d of %d keys (%s)", len(bad), len(want), s)
}
