package web

import (
	"fmt"
	"net/url"
	"time"

	"github.com/statelab/statelab/engine"
	"github.com/statelab/statelab/state"
)

// TTLSettings are the sandbox's state time-to-live (docs/protocol.md): one
// StateTtlConfig for the state of every keyed operator of the template.
type TTLSettings struct {
	TTL          time.Duration // 0: no TTL
	UpdateType   string
	Visibility   string
	FullSnapshot bool
}

// maxSandboxTTL bounds the sandbox's TTL (a run lasts minutes of job time).
const maxSandboxTTL = 24 * time.Hour

// keyedKind reports whether operators of kind keep keyed state.
func keyedKind(kind string) bool {
	switch kind {
	case engine.KindCount, engine.KindSum, engine.KindWindowCount, engine.KindAlerts:
		return true
	}
	return false
}

// parseTTLSettings reads ttl, ttlUpdateType, ttlStateVisibility and
// ttlCleanupFullSnapshot.
func parseTTLSettings(q url.Values, s *TTLSettings) error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrBadArgs, field, fmt.Sprintf(format, a...))
	}
	if v := q.Get("ttl"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || (d != 0 && d < time.Millisecond) || d < 0 || d > maxSandboxTTL {
			return bad("ttl", "%q: want a duration such as 500ms or 10s, at most %v (0 turns the TTL off)", v, maxSandboxTTL)
		}
		s.TTL = d
	}
	if v := q.Get("ttlUpdateType"); v != "" {
		if v != string(state.OnCreateAndWrite) && v != string(state.OnReadAndWrite) {
			return bad("ttlUpdateType", "%q is unknown; choose OnCreateAndWrite or OnReadAndWrite", v)
		}
		s.UpdateType = v
	}
	if v := q.Get("ttlStateVisibility"); v != "" {
		if v != string(state.NeverReturnExpired) && v != string(state.ReturnExpiredIfNotCleanedUp) {
			return bad("ttlStateVisibility", "%q is unknown; choose NeverReturnExpired or ReturnExpiredIfNotCleanedUp", v)
		}
		s.Visibility = v
	}
	if v := q.Get("ttlCleanupFullSnapshot"); v != "" {
		if v != "true" && v != "false" {
			return bad("ttlCleanupFullSnapshot", "%q: want true or false", v)
		}
		s.FullSnapshot = v == "true"
	}
	if s.TTL == 0 && (s.UpdateType != "" || s.Visibility != "" || s.FullSnapshot) {
		return bad("ttl", "ttlUpdateType, ttlStateVisibility and ttlCleanupFullSnapshot need a ttl as well")
	}
	return nil
}

// apply puts the TTL into the options of every keyed operator.
func (s TTLSettings) apply(spec *engine.JobSpec) {
	if s.TTL == 0 {
		return
	}
	for i := range spec.Operators {
		o := &spec.Operators[i]
		if !keyedKind(o.Kind) {
			continue
		}
		if o.Options == nil {
			o.Options = map[string]any{}
		}
		o.Options["ttl"] = s.TTL.String()
		if s.UpdateType != "" {
			o.Options["ttlUpdateType"] = s.UpdateType
		}
		if s.Visibility != "" {
			o.Options["ttlStateVisibility"] = s.Visibility
		}
		if s.FullSnapshot {
			o.Options["ttlCleanupFullSnapshot"] = true
		}
	}
}

// ttlSettingsFromSpec writes a spec's TTL back as settings (share links).
func ttlSettingsFromSpec(q url.Values, spec *engine.JobSpec) {
	for _, o := range spec.Operators {
		if !keyedKind(o.Kind) {
			continue
		}
		for _, k := range []string{"ttl", "ttlUpdateType", "ttlStateVisibility"} {
			if v, ok := o.Options[k].(string); ok {
				q.Set(k, v)
			}
		}
		if v, ok := o.Options["ttlCleanupFullSnapshot"].(bool); ok && v {
			q.Set("ttlCleanupFullSnapshot", "true")
		}
	}
}
