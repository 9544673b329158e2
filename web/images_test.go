package web

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/statelab/statelab/engine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sameAt compares two snapshots as sameRun does, without the bytes read
// from checkpoint storage, which count the views' own reads (a snapshot
// reads the newest checkpoint's offsets), so they depend on how often
// someone looked.
func sameAt(a, b engine.Snapshot) bool {
	a.Checkpoints.Storage.BytesRead, b.Checkpoints.Storage.BytesRead = 0, 0
	return sameRun(a, b)
}

func diffAt(a, b engine.Snapshot) []string {
	a.Checkpoints.Storage.BytesRead, b.Checkpoints.Storage.BytesRead = 0, 0
	return runDiff(a, b)
}

// TestSeekFromImagesEqualsReplayFromZero: a playing run keeps images; a
// seek back is a fork of the nearest image stepped on, and shows exactly
// what a replay of the seed and command log from step 0 shows.
func TestSeekFromImagesEqualsReplayFromZero(t *testing.T) {
	t.Parallel() // CPU-bound, no browser: it runs beside the browser tests, which mostly wait
	ts := newRealServer(t, nil)
	c := ts.dial("template=wordcount&seed=6&interval=200ms", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	s, _ := ts.srv.Session(id)
	step := func(n int, cmdID string) {
		send(t, c, `{"type":"command","id":"`+cmdID+`","name":"step","args":{"count":`+itoa(int64(n))+`}}`)
		require.Equal(t, "ack", reply(t, c, cmdID)["type"])
	}
	for i := range 4 {
		step(imageEvery, "s"+itoa(int64(i)))
		// The image is taken by the session's pump after the step's events.
		want := i + 1
		eventually(t, 10*time.Second, func() bool { return len(s.Images()) >= want }, "an image after each 2000 steps")
	}
	send(t, c, `{"type":"command","id":"k","name":"crash-taskmanager","args":{"taskManager":"tm-1"}}`)
	require.Equal(t, "ack", reply(t, c, "k")["type"])
	step(1500, "s9")
	head := s.Snapshot()
	imgs := s.Images()
	require.GreaterOrEqual(t, len(imgs), 4)
	for i, st := range imgs {
		assert.GreaterOrEqual(t, st, int64((i+1)*imageEvery), "images every %d steps", imageEvery)
	}

	// The replays below take minutes on a busy machine, while nobody reads
	// c: the server closes a viewer that stops reading (a broken pipe on
	// the next send, seen once at load 20). Leave, and come back to the
	// same session for the seek.
	require.NoError(t, c.Close())
	for _, target := range []int64{imgs[1] + 333, imgs[3] - 1, head.Commands[0].Step, head.Step - 10} {
		dir := t.TempDir()
		fromImage, err := s.stepperAt(filepath.Join(dir, "a"), head.Commands, target)
		require.NoError(t, err)
		fromZero, err := replayStepper(s.run.Spec, filepath.Join(dir, "b"), head.Commands, target, nil)
		require.NoError(t, err)
		a, b := fromImage.Snapshot(), fromZero.Snapshot()
		assert.Equal(t, target, a.Step)
		assert.True(t, sameAt(b, a), "step %d from an image = from step 0: %v", target, diffAt(b, a))
		require.NoError(t, fromImage.Close())
		require.NoError(t, fromZero.Close())
	}

	// Over the protocol: seek back, see the same picture.
	c = ts.dial("session="+id, nil)
	readUntil(t, c, "snapshot", "")
	target := head.Commands[0].Step - 7
	send(t, c, `{"type":"command","id":"q","name":"seek","args":{"step":`+itoa(target)+`}}`)
	require.Equal(t, "ack", reply(t, c, "q")["type"])
	view := s.Snapshot()
	zero, err := replayStepper(s.run.Spec, t.TempDir(), head.Commands, target, nil)
	require.NoError(t, err)
	defer zero.Close()
	assert.True(t, sameAt(zero.Snapshot(), view), "%v", diffAt(zero.Snapshot(), view))
}

// TestSeekCostDoesNotGrowWithTheRun seeks 1000 steps back from the
// present in runs of growing length: from an image it replays the same
// number of steps; a replay from step 0 grows with the run. Both seeks
// give the same job.
func TestSeekCostDoesNotGrowWithTheRun(t *testing.T) {
	t.Parallel() // CPU-bound, no browser: it runs beside the browser tests, which mostly wait
	if testing.Short() {
		t.Skip("measures runs of up to 40000 steps")
	}
	ts := newRealServer(t, nil)
	c := ts.dial("template=wordcount&seed=2&interval=200ms&keys=50", nil)
	id := readUntil(t, c, "snapshot", "")["session"].(string)
	s, _ := ts.srv.Session(id)
	n := 0
	type figure struct {
		length            int64
		image, replay     time.Duration
		imageStep, target int64
	}
	var figs []figure
	for _, length := range []int{5000, 20000} {
		for n < length {
			k := min(imageEvery/2, length-n)
			send(t, c, `{"type":"command","id":"s","name":"step","args":{"count":`+itoa(int64(k))+`}}`)
			require.Equal(t, "ack", reply(t, c, "s")["type"])
			n += k
			now := s.Snapshot().Step
			eventually(t, 20*time.Second, func() bool {
				imgs := s.Images()
				return now < imageEvery*3/4 || len(imgs) > 0 && imgs[len(imgs)-1] >= now-imageEvery
			}, "an image within one spacing of the present")
		}
		head := s.Snapshot()
		eventually(t, 10*time.Second, func() bool {
			imgs := s.Images()
			return len(imgs) > 0 && imgs[len(imgs)-1] >= head.Step-imageEvery
		}, "an image within one spacing of the present")
		// 1000 steps past an image, so every run replays as many steps.
		base := s.x.imageAt(head.Step - 1000)
		require.NotNil(t, base)
		target := base.step + 1000
		dir := t.TempDir()
		start := time.Now()
		a, err := s.stepperAt(filepath.Join(dir, "a"), head.Commands, target)
		require.NoError(t, err)
		fi := figure{length: head.Step, image: time.Since(start), target: target}
		if img := s.x.imageAt(target); img != nil {
			fi.imageStep = img.step
		}
		start = time.Now()
		b, err := replayStepper(s.run.Spec, filepath.Join(dir, "b"), head.Commands, target, nil)
		require.NoError(t, err)
		fi.replay = time.Since(start)
		assert.True(t, sameAt(b.Snapshot(), a.Snapshot()))
		_ = a.Close()
		_ = b.Close()
		_ = os.RemoveAll(dir)
		figs = append(figs, fi)
		t.Logf("run of %d steps, seek to %d: from the image at %d %v, replay from step 0 %v", fi.length, fi.target, fi.imageStep, fi.image.Round(time.Microsecond), fi.replay.Round(time.Microsecond))
	}
	// The cost is judged in engine steps, not wall-clock time (a busy
	// machine makes timings noisy; they are logged above for the notes):
	// from an image a seek replays the same 1000 steps at every length,
	// while a replay from step 0 replays the whole run up to the target.
	for _, f := range figs {
		assert.Equal(t, int64(1000), f.target-f.imageStep, "run of %d steps: the seek starts from the image 1000 steps back", f.length)
	}
	first, last := figs[0], figs[len(figs)-1]
	assert.Greater(t, last.target, 3*first.target, "the runs grow, so a replay from step 0 replays more and more steps")
}

// TestForkFullSpeedClassroom: a follower forks a classroom that runs at
// full speed (Live); its copy runs in teaching mode from the presenter's
// state, with a timeline of its own; the presenter's run goes on.
func TestForkFullSpeedClassroom(t *testing.T) {
	ts := newRealServer(t, nil)
	status, info := ts.createClassroom(`{"settings":{"seed":"5","driver":"live"}}`, nil)
	require.Equal(t, http.StatusCreated, status, "%v", info)
	code := info["code"].(string)
	presenter := ts.dial("classroom="+code+"&token="+info["presenterToken"].(string), nil)
	readUntil(t, presenter, "snapshot", "")
	room, _ := ts.srv.Session(info["session"].(string))
	eventually(t, 20*time.Second, func() bool { return room.Snapshot().Checkpoints.Counts.Completed >= 1 }, "a checkpoint at full speed")
	send(t, presenter, `{"type":"command","id":"p1","name":"crash-taskmanager","args":{"taskManager":"tm-2"}}`)
	require.Equal(t, "ack", reply(t, presenter, "p1")["type"])

	f := ts.dial("classroom="+code, nil)
	readUntil(t, f, "snapshot", "")
	send(t, f, `{"type":"command","id":"k","name":"fork"}`)
	ack := reply(t, f, "k")
	require.Equal(t, "ack", ack["type"], "a full-speed run forks: %v", ack)
	assert.EqualValues(t, 0, ack["step"], "the copy's own steps start at 0")
	fork, ok := ts.srv.Session(ack["session"].(string))
	require.True(t, ok)
	fs := fork.Snapshot()
	assert.Equal(t, "step", fs.Driver, "the copy runs in teaching mode")
	assert.Equal(t, 1, fs.Counters.Crashes, "with the presenter's crash")
	require.Len(t, fs.Commands, 1)
	assert.Equal(t, engine.CmdCrashTaskManager, fs.Commands[0].Command.Name)
	assert.Equal(t, []int64{0}, fork.Images(), "its timeline starts at the copy")

	own := ts.dial("session="+fork.ID, nil)
	readUntil(t, own, "snapshot", "")
	send(t, own, `{"type":"command","id":"r","name":"restart-taskmanager","args":{"taskManager":"tm-2"}}`)
	require.Equal(t, "ack", reply(t, own, "r")["type"])
	send(t, own, `{"type":"command","id":"s","name":"step","args":{"count":300}}`)
	require.Equal(t, "ack", reply(t, own, "s")["type"])
	// Seek back within the copy's own timeline, and forward again.
	send(t, own, `{"type":"command","id":"b","name":"seek","args":{"step":100}}`)
	require.Equal(t, "ack", reply(t, own, "b")["type"])
	assert.EqualValues(t, 100, fork.Snapshot().Step)
	send(t, own, `{"type":"command","id":"n","name":"seek","args":{"step":-1}}`)
	require.Equal(t, "ack", reply(t, own, "n")["type"])
	// Its share link is refused with the reason: no seed and log from the start.
	resp, err := http.Get(ts.hs.URL + "/api/sessions/" + fork.ID + "/share")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusConflict, resp.StatusCode)

	// The presenter's run still runs at full speed, with its own TaskManager lost.
	rs := room.Snapshot()
	assert.Equal(t, "live", rs.Driver)
	assert.Equal(t, "LOST", rs.TaskManagers[1].Status)
}

// TestImagesStayWithinTheServersBudget: with a budget of 4 images, two
// playing sessions together keep at most one over it (a session thins
// itself by two for each new image once the server is over), each keeps
// at least two, and a seek in either still equals a replay from step 0.
func TestImagesStayWithinTheServersBudget(t *testing.T) {
	t.Parallel() // CPU-bound, no browser: it runs beside the browser tests, which mostly wait
	if testing.Short() {
		t.Skip("plays two runs of 20000 steps")
	}
	ts := newRealServer(t, func(c *Config) { c.MaxImages = 4 })
	type run struct {
		c *websocket.Conn
		s *Session
	}
	var runs []run
	for i := range 2 {
		c := ts.dial("template=wordcount&seed="+itoa(int64(i+3))+"&interval=200ms", nil)
		id := readUntil(t, c, "snapshot", "")["session"].(string)
		s, _ := ts.srv.Session(id)
		runs = append(runs, run{c, s})
	}
	for n := 0; n < 10; n++ {
		for _, r := range runs {
			send(t, r.c, `{"type":"command","id":"s","name":"step","args":{"count":`+itoa(imageEvery)+`}}`)
			require.Equal(t, "ack", reply(t, r.c, "s")["type"])
			want := min(n+1, 2)
			eventually(t, 10*time.Second, func() bool { return len(r.s.Images()) >= want }, "images of a playing run")
		}
		assert.LessOrEqual(t, ts.srv.images.Load(), int64(4+1), "after round %d: the server's images stay within the budget", n)
	}
	total := 0
	for _, r := range runs {
		imgs := r.s.Images()
		assert.GreaterOrEqual(t, len(imgs), 2, "a session keeps two images however tight the budget")
		total += len(imgs)
		head := r.s.Snapshot()
		target := head.Step - 3*imageEvery - 17
		dir := t.TempDir()
		a, err := r.s.stepperAt(filepath.Join(dir, "a"), head.Commands, target)
		require.NoError(t, err)
		b, err := replayStepper(r.s.run.Spec, filepath.Join(dir, "b"), head.Commands, target, nil)
		require.NoError(t, err)
		assert.True(t, sameAt(b.Snapshot(), a.Snapshot()), "%v", diffAt(b.Snapshot(), a.Snapshot()))
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
	}
	assert.EqualValues(t, total, ts.srv.images.Load(), "the server's count is the sessions' images")
}
