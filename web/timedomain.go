package web

import (
	"fmt"
	"net/url"

	"github.com/statelab/statelab/engine"
)

// hasAlerts reports whether spec has an alerts operator (the only operator
// whose timers the sandbox's timeDomain setting chooses the clock of).
func hasAlerts(spec *engine.JobSpec) bool {
	for _, o := range spec.Operators {
		if o.Kind == engine.KindAlerts {
			return true
		}
	}
	return false
}

// parseTimeDomain reads timeDomain (event or processing): the clock the
// alerts operator's timeout timers run on (Flink's TimeDomain: the
// CountWithTimeoutFunction with registerEventTimeTimer or
// registerProcessingTimeTimer). Only a template with an alerts operator
// takes it.
func parseTimeDomain(t *JobTemplate, q url.Values, s *SandboxSettings) error {
	v := q.Get("timeDomain")
	if v == "" {
		return nil
	}
	if v != engine.TimeDomainEvent && v != engine.TimeDomainProcessing {
		return fmt.Errorf("%w: timeDomain: %q is unknown; choose event (timers fire when the watermark passes them, the default) or processing (timers fire on the subtask's processing-time clock)", ErrBadArgs, v)
	}
	if !hasAlerts(t.build(t.Defaults)) {
		return fmt.Errorf("%w: timeDomain: template %s has no timers to time out; only the alerts template takes it", ErrBadArgs, t.ID)
	}
	s.TimeDomain = v
	return nil
}

// applyTimeDomain sets the alerts operators' timeDomain option.
func applyTimeDomain(spec *engine.JobSpec, domain string) {
	if domain == "" {
		return
	}
	for i := range spec.Operators {
		o := &spec.Operators[i]
		if o.Kind != engine.KindAlerts {
			continue
		}
		if o.Options == nil {
			o.Options = map[string]any{}
		}
		o.Options["timeDomain"] = domain
	}
}

// timeDomainFromSpec writes an alerts operator's timeDomain back as the
// setting (share links).
func timeDomainFromSpec(q url.Values, spec *engine.JobSpec) {
	for _, o := range spec.Operators {
		if v, ok := o.Options["timeDomain"].(string); ok && o.Kind == engine.KindAlerts {
			q.Set("timeDomain", v)
		}
	}
}
