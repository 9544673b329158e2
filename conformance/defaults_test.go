package conformance

import (
	"fmt"
)

// defaultMaxParallelism: word count with no max parallelism configured on
// any operator, count rescaled 2 -> 3. Flink takes the default
// (KeyGroupRangeAssignment.computeDefaultMaxParallelism: 128 for every
// parallelism up to 85) on the first run, and the restore at 3 takes the
// savepoint's; StateLab fills rescale.DefaultMaxParallelism into the spec.
// Parallelisms from 86 on (256 and more) stay decided by rescale's
// TestDefaultMaxParallelism only: a count of 86 subtasks is too heavy for the
// catalogue.
func defaultMaxParallelism() *scenario {
	spec := wordCount(2, "exactly-once", map[string]any{"interval": "100ms"}, nil)
	for _, o := range spec["operators"].([]any) {
		delete(o.(map[string]any), "maxParallelism")
	}
	return &scenario{
		name: "default-max-parallelism-2-3",
		claim: "With no max parallelism configured, keyed state gets Flink's default number of key groups " +
			"(KeyGroupRangeAssignment.computeDefaultMaxParallelism: 128 at parallelism 2) and keeps it when the job is " +
			"rescaled to 3 from a savepoint",
		spec:       spec,
		partitions: map[string]int{"source": 2},
		lines:      map[string][][]string{"source": {genLines(74, 30, 3), genLines(75, 30, 3)}},
		phases:     []phase{{}, {rescale: map[string]int{"count": 3}}},
		slots:      4,
		check:      checkDefaultMaxParallelism,
	}
}

func checkDefaultMaxParallelism(j *judge, sl *slResult, fl *trace) {
	for i := range fl.Phases {
		maxP := 0
		for _, v := range fl.Phases[i].Vertices {
			if v.Name == "count" {
				maxP = v.MaxParallelism
			}
		}
		j.t.Logf("Flink phase %d: count's max parallelism %d", i, maxP)
		j.true(fmt.Sprintf("Flink's count has max parallelism 128 in phase %d", i), maxP == 128, maxP)
	}
	if sl == nil {
		return
	}
	want := wordCountOutput(catalogueLines("default-max-parallelism-2-3")...)
	j.equal("key-group ranges of count at parallelism 2", sl.phases[0].keyGroups["count"], flinkKeyGroups(&fl.Phases[0], "count"))
	j.equal("key-group ranges of count after rescale to 3", sl.phases[1].keyGroups["count"], flinkKeyGroups(&fl.Phases[1], "count"))
	j.equal("keys and counts each count subtask restored after rescale to 3", sl.phases[1].restoredKeys["count"], flinkKeys(&fl.Phases[1], "open", "count"))
	j.equal("keys and counts each count subtask holds at the end", sl.phases[1].finalKeys["count"], flinkKeys(&fl.Phases[1], "close", "count"))
	checkExactOutput(j, sl, fl, want)
}
