package web

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/statelab/statelab/engine"
)

// Sandbox settings of operator chaining and unaligned checkpoints
// (engine/chain.go, engine/unaligned.go). The names are exact: outside
// clients depend on them (docs/protocol.md).

// PipelineSettings are the sandbox settings of chaining and unaligned
// checkpoints. Zero values keep the template's: no chaining (every
// template says chaining: false; Flink chains by default, and
// chaining=true turns it on), aligned checkpoints (as Flink's default).
type PipelineSettings struct {
	// Chaining is pipeline.operator-chaining: "" (the template's, off),
	// "true" or "false".
	Chaining string
	// Unaligned is execution.checkpointing.unaligned.
	Unaligned bool
	// AlignedTimeout is execution.checkpointing.aligned-checkpoint-timeout.
	AlignedTimeout time.Duration
}

// parsePipelineSettings reads the chaining and unaligned settings from q.
func parsePipelineSettings(q url.Values, p *PipelineSettings) error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadArgs, field, fmt.Sprintf(format, a...))
	}
	boolean := func(name, what string) (bool, bool, error) {
		v := q.Get(name)
		if v == "" {
			return false, false, nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return false, false, bad(name, "%q: want true or false (%s)", v, what)
		}
		return b, true, nil
	}
	on, set, err := boolean("chaining", "pipeline.operator-chaining: true chains operators as Flink does by default, false keeps every operator its own task")
	if err != nil {
		return err
	}
	if set {
		p.Chaining = strconv.FormatBool(on)
	}
	if p.Unaligned, _, err = boolean("unaligned", "execution.checkpointing.unaligned: barriers overtake in-flight records, which become channel state"); err != nil {
		return err
	}
	if v := q.Get("alignedCheckpointTimeout"); v != "" {
		d, ok := parseDurationSetting(v)
		if !ok || d < 0 || d > maxFailureDuration {
			return bad("alignedCheckpointTimeout", "%q: want a duration such as 20ms, from 0 to %v (execution.checkpointing.aligned-checkpoint-timeout; 0 starts every checkpoint unaligned)", v, maxFailureDuration)
		}
		if d > 0 && !p.Unaligned {
			return bad("alignedCheckpointTimeout", "%q needs unaligned=true (the timeout switches an aligned checkpoint to unaligned)", v)
		}
		p.AlignedTimeout = d
	}
	return nil
}

// apply writes p into spec.
func (p PipelineSettings) apply(spec *engine.JobSpec) {
	if p.Chaining != "" {
		on := p.Chaining == "true"
		spec.Chaining = &on
	}
	spec.Checkpointing.Unaligned = p.Unaligned
	spec.Checkpointing.AlignedCheckpointTimeout = engine.Duration(p.AlignedTimeout)
}

// pipelineSettingsFromSpec writes the settings that rebuild spec's
// chaining and checkpoint alignment into q.
func pipelineSettingsFromSpec(q url.Values, spec *engine.JobSpec) {
	if spec.Chaining != nil {
		q.Set("chaining", strconv.FormatBool(*spec.Chaining))
	}
	if c := spec.Checkpointing; c.Unaligned {
		q.Set("unaligned", "true")
		if c.AlignedCheckpointTimeout > 0 {
			q.Set("alignedCheckpointTimeout", c.AlignedCheckpointTimeout.D().String())
		}
	}
}
