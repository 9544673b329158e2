package web

import "github.com/statelab/statelab/engine"

// maxUpdatesPerEvent bounds the keyed-state writes one coalesced
// state-updated event carries; the newest write of each key wins.
const maxUpdatesPerEvent = 256

// coalescer gathers the events of one frame. Data-plane events of the same
// kind and place (records on a channel, reads of a partition, state writes
// of a subtask) are merged into one, so a frame stays small however fast the
// engine runs. Any other event (a barrier, a status change, a checkpoint)
// seals the open merges: nothing is merged across it, so the order a viewer
// sees — records, then the barrier, then records — is the engine's order.
type coalescer struct {
	evs  []Event
	open map[mergeKey]int // index in evs of a mergeable event still open
}

type mergeKey struct {
	kind  engine.EventKind
	where string
	part  int
}

func (c *coalescer) len() int { return len(c.evs) }

// take returns the frame's events and starts a new frame.
func (c *coalescer) take() []Event {
	evs := c.evs
	c.evs = nil
	clear(c.open)
	return evs
}

func (c *coalescer) add(e Event) {
	var k mergeKey
	switch e.Kind {
	case engine.EvRecordsSent, engine.EvRecordsReceived:
		k = mergeKey{kind: e.Kind, where: e.Channel}
	case engine.EvSourceRead:
		k = mergeKey{kind: e.Kind, where: e.Task, part: e.Partition}
	case engine.EvSinkWrite:
		k = mergeKey{kind: e.Kind, where: e.Task + "|" + e.Transaction}
	case engine.EvStateUpdated, engine.EvWatermark:
		k = mergeKey{kind: e.Kind, where: e.Task}
	case engine.EvFlow:
		k = mergeKey{kind: e.Kind}
	default:
		clear(c.open)
		c.evs = append(c.evs, e)
		return
	}
	if c.open == nil {
		c.open = map[mergeKey]int{}
	}
	i, ok := c.open[k]
	if !ok {
		c.open[k] = len(c.evs)
		if e.Kind == engine.EvStateUpdated || e.Kind == engine.EvFlow {
			// Own the slices: they are merged into below.
			e.Updates = append([]engine.StateUpdate(nil), e.Updates...)
			e.Flows = append([]engine.ChannelFlow(nil), e.Flows...)
			if len(e.Updates) == 0 {
				e.Updates = nil
			}
			if len(e.Flows) == 0 {
				e.Flows = nil
			}
		}
		c.evs = append(c.evs, e)
		return
	}
	m := &c.evs[i]
	m.Seq, m.At, m.Step = e.Seq, e.At, e.Step
	switch e.Kind {
	case engine.EvRecordsSent, engine.EvRecordsReceived, engine.EvSinkWrite:
		m.Records += e.Records
		m.Message = e.Message
	case engine.EvSourceRead:
		m.Records += e.Records // Offset stays the first offset read
		m.Message = e.Message
	case engine.EvWatermark:
		m.Watermark = e.Watermark
		m.Message = e.Message
	case engine.EvStateUpdated:
		m.Updates = mergeUpdates(m.Updates, e.Updates)
		m.Message = e.Message
	case engine.EvFlow:
		m.Flows = mergeFlows(m.Flows, e.Flows)
	}
}

// mergeUpdates keeps the newest value of each (state, key, window), in the
// order keys were first written, capped at maxUpdatesPerEvent (the oldest
// go first: the snapshot has every value anyway).
func mergeUpdates(dst, src []engine.StateUpdate) []engine.StateUpdate {
	for _, u := range src {
		found := false
		for j := range dst {
			d := &dst[j]
			if d.Key == u.Key && d.State == u.State && d.Window == u.Window {
				d.Value = u.Value
				found = true
				break
			}
		}
		if !found {
			dst = append(dst, u)
		}
	}
	if len(dst) > maxUpdatesPerEvent {
		dst = append(dst[:0], dst[len(dst)-maxUpdatesPerEvent:]...)
	}
	return dst
}

func mergeFlows(dst, src []engine.ChannelFlow) []engine.ChannelFlow {
	for _, f := range src {
		found := false
		for j := range dst {
			if dst[j].Channel == f.Channel {
				dst[j].Records += f.Records
				found = true
				break
			}
		}
		if !found {
			dst = append(dst, f)
		}
	}
	return dst
}
