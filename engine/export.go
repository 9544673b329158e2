package engine

import (
	"fmt"
	"slices"
)

// TopicRecords returns the records a source of spec reads, per partition in
// offset order: exactly what the engine's topic for that source holds when
// the job starts (generated from the spec's seed, then options.lines). It is
// how the same input reaches a real Flink job (statelab export-flink, the
// conformance tests); spec must have passed Validate. maxRecords bounds the
// total (0: no bound) and is refused when exceeded, so a topic of millions of
// generated records is not copied by accident.
func TopicRecords(spec *JobSpec, source string, maxRecords int) ([][]Record, error) {
	i := slices.IndexFunc(spec.Operators, func(o OperatorSpec) bool { return o.ID == source })
	if i < 0 || spec.Operators[i].Kind != KindSource {
		return nil, fmt.Errorf("%w: %q is not a source of job %q", ErrUnknown, source, spec.Name)
	}
	o, err := parseOptions(&spec.Operators[i])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	// The seed newCore gives operator i's topic (export_test.go checks they agree).
	t := newTopic(source, spec.Seed+int64(i)*7919, o)
	out := make([][]Record, t.partitions)
	total := int64(0)
	for p := range t.partitions {
		total += t.end(p)
	}
	if maxRecords > 0 && total > int64(maxRecords) {
		return nil, fmt.Errorf("source %s holds %d records, more than the %d asked for at most", source, total, maxRecords)
	}
	for p := range t.partitions {
		out[p] = t.read(nil, p, 0, int(t.end(p)))
	}
	return out, nil
}
