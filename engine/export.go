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

// TopicRecordsWithTyped is TopicRecords plus the records the run's inject
// commands appended (log: the run's command log, as Snapshot.Commands
// holds it), each where and as the engine's inject put it: partition -1
// takes the next in turn, a typed line is keyed by itself with timestamp 0,
// a typed click comes after the generated windows. Refused commands add
// nothing. maxRecords bounds the total as in TopicRecords.
func TopicRecordsWithTyped(spec *JobSpec, source string, log []LoggedCommand, maxRecords int) ([][]Record, error) {
	out, err := TopicRecords(spec, source, maxRecords)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(spec.Operators, func(o OperatorSpec) bool { return o.ID == source })
	o, err := parseOptions(&spec.Operators[i])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	tp := newTopic(source, spec.Seed+int64(i)*7919, o) // as TopicRecords (and newCore) build it
	total := 0
	for _, p := range out {
		total += len(p)
	}
	injected := 0
	for _, lc := range log {
		c := lc.Command
		if lc.Failed || c.Name != CmdInject || c.Operator != source {
			continue
		}
		p, r := tp.typed(injected, c.Partition, c.Text)
		if p < 0 || p >= len(out) {
			continue // the engine refused it (a partition the source does not have)
		}
		injected++
		out[p] = append(out[p], r)
		total++
		if maxRecords > 0 && total > maxRecords {
			return nil, fmt.Errorf("source %s holds %d records with the typed ones, more than the %d asked for at most", source, total, maxRecords)
		}
	}
	return out, nil
}

// typed is the partition and record the engine's inject (core.inject) makes
// of the n-th typed record of this topic with partition p and text: p < 0
// takes the next partition in turn; the record is keyed by its text (like a
// generated one: a click's key is its page, which the user typed), with
// timestamp 0, or for a clicks topic the start of the window after the
// generated ones. A partition out of range is returned as is (refused).
// core.inject and TopicRecordsWithTyped both call it: one rule for both.
func (t *topic) typed(n, p int, text string) (int, Record) {
	if p < 0 {
		p = n % t.partitions
	}
	ts := int64(0)
	if t.gen == GeneratorClicks {
		ts = t.windowSize * int64(t.records/(t.pages*t.perWindow)+1)
	}
	return p, Record{Key: text, Text: text, Timestamp: ts}
}
