package web

import "encoding/json"

// A viewer's backlog: what the hub holds back for a viewer that has fallen
// behind (a quarter of its send buffer waits, lagAt) instead of queueing
// frame after frame until the buffer is full and the viewer is closed as
// too slow. A browser whose page is busy for ten or twenty seconds on a
// loaded machine (a failover, a rescale, a screenshot) so keeps its
// connection, and when it reads again it gets, in order:
//
//   - every event the views narrate (statuses, failures, checkpoints and
//     their acknowledgements, alignment, restores, rescales, commands),
//     those of consecutive events frames merged into one frame; the
//     data-plane events (records, reads, watermarks, barriers) are left
//     out, the snapshots carry their counts;
//   - only the newest of the frames a newer one supersedes (a snapshot is
//     the whole model; the timeline is the whole marker list), in the
//     place of the newest;
//   - every other frame (lesson messages, acks, errors) as it came.
//
// The hub drains the backlog into the send queue as the writer empties it
// (hub.run's ticker). A viewer whose backlog passes the bounds below — it
// has stopped reading, not slowed down — is closed with 1008 as before.
type backlog struct {
	items  []held
	events int // narrated events held
	frames int // frames held as they came (not merged)
	bytes  int // an estimate of what the items hold
}

// held is one item of a backlog: a frame as it came (frame set), or
// narrated events of one or more events frames merged (frame nil).
type held struct {
	frame  []byte
	latest string // the key of a frame a newer one with the same key supersedes
	events []Event
}

// Superseding keys (hubMsg.latest).
const (
	latestSnapshot = "snapshot"
	latestTimeline = "timeline"
)

// Bounds of a backlog, per frame of the send buffer (SendBuffer, 256 by
// default: 4,096 narrated events, 256 frames, 16 MiB). A failover of a
// 12-subtask job tells about 60 events; a session's frames are a few KiB.
const (
	backlogEventsPerSlot = 16
	backlogBytesPerSlot  = 64 << 10
)

// lagAt is the queue length from which c counts as behind: a quarter of its
// send buffer (64 of 256 frames, about three seconds of a running session's
// stream).
func lagAt(c *client) int {
	if n := cap(c.send) / 4; n > 0 {
		return n
	}
	return 1
}

// eventSize estimates an event's JSON size (its strings and a fixed part),
// for the backlog's byte bound; the merged frame is built only to send it.
func eventSize(e *Event) int {
	n := 160 + len(e.Task) + len(e.Operator) + len(e.TaskManager) + len(e.Channel) + len(e.From) + len(e.To) +
		len(e.Status) + len(e.Previous) + len(e.Key) + len(e.Window) + len(e.Text) + len(e.Transaction) + len(e.Message)
	n += 64 * (len(e.Updates) + len(e.Flows))
	return n
}

// add puts it at the end of b: a frame with a superseding key first takes
// the place of the earlier one with that key (whose neighbouring events
// then merge), and events join the events item before them.
func (b *backlog) add(it held) {
	if it.latest != "" {
		kept := b.items[:0]
		for _, x := range b.items {
			if x.latest == it.latest {
				b.frames--
				b.bytes -= len(x.frame)
				continue
			}
			if x.frame == nil && len(kept) > 0 && kept[len(kept)-1].frame == nil {
				kept[len(kept)-1].events = append(kept[len(kept)-1].events, x.events...)
				continue
			}
			kept = append(kept, x)
		}
		for i := len(kept); i < len(b.items); i++ {
			b.items[i] = held{} // let the dropped frames go
		}
		b.items = kept
	}
	if it.frame == nil {
		for i := range it.events {
			b.bytes += eventSize(&it.events[i])
		}
		b.events += len(it.events)
		if n := len(b.items); n > 0 && b.items[n-1].frame == nil {
			// A fresh slice: the events may be shared with other viewers'
			// backlogs (narratedEvents returns its argument when all are
			// narrated).
			last := &b.items[n-1]
			last.events = append(last.events[:len(last.events):len(last.events)], it.events...)
			return
		}
		b.items = append(b.items, held{events: it.events[:len(it.events):len(it.events)]})
		return
	}
	b.frames++
	b.bytes += len(it.frame)
	b.items = append(b.items, it)
}

// over says whether b has passed its bounds for a send buffer of slots
// frames: the viewer has stopped reading.
func (b *backlog) over(slots int) bool {
	return b.events > backlogEventsPerSlot*slots || b.frames > slots || b.bytes > backlogBytesPerSlot*slots
}

// take removes and returns b's first item as a frame to send.
func (b *backlog) take() []byte {
	it := b.items[0]
	b.items[0] = held{}
	b.items = b.items[1:]
	if it.frame != nil {
		b.frames--
		b.bytes -= len(it.frame)
		return it.frame
	}
	b.events -= len(it.events)
	for i := range it.events {
		b.bytes -= eventSize(&it.events[i])
	}
	frame, err := json.Marshal(eventsMsg{Type: "events", Events: it.events})
	if err != nil { // an Event always marshals; keep the stream going
		return nil
	}
	return frame
}
