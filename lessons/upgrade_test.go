package lessons

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/engine"
)

// The upgrade-accepted prediction says what the engine does: for each job
// (with and without uids) and change, a Stepper takes savepoint 1 and
// performs the upgrade, and the engine's accept or refusal (Flink's
// non-restored-state message) must be the prediction's answer. The lint's
// copy of the change must also give the job the engine runs afterwards.
func TestPredictionUpgradeAcceptedMatchesTheEngine(t *testing.T) {
	job := func(uids bool) string {
		uid := func(id string) string {
			if uids {
				return ", uid: " + id
			}
			return ""
		}
		return `
name: upgrades
operators:
  - {id: source` + uid("source") + `, kind: source, parallelism: 2, options: {partitions: 2, generator: words, records: 2000, keys: 10}}
  - {id: tokenizer` + uid("tokenizer") + `, kind: tokenizer, parallelism: 2}
  - {id: tally` + uid("tally") + `, kind: tally, parallelism: 2}
  - {id: count` + uid("count") + `, kind: count, parallelism: 2}
  - {id: sink` + uid("sink") + `, kind: sink, parallelism: 1}
edges:
  - {from: source, to: tokenizer, partitioner: forward}
  - {from: tokenizer, to: tally, partitioner: forward}
  - {from: tally, to: count, partitioner: hash}
  - {from: count, to: sink, partitioner: rebalance}
checkpointing: {interval: 0s}
`
	}
	for _, tc := range []struct {
		name string
		uids bool
		args map[string]any
	}{
		{"remove the tally, uids", true, map[string]any{"change": "remove-operator", "operator": "tally"}},
		{"remove the tally, uids, allowed", true, map[string]any{"change": "remove-operator", "operator": "tally", "allowNonRestoredState": true}},
		{"remove the tally, no uids", false, map[string]any{"change": "remove-operator", "operator": "tally"}},
		{"remove the tokenizer, uids", true, map[string]any{"change": "remove-operator", "operator": "tokenizer"}},
		{"add a map, no uids", false, map[string]any{"change": "add-operator", "operator": "source", "kind": "map"}},
		{"add a map, uids", true, map[string]any{"change": "add-operator", "operator": "source", "kind": "map"}},
		{"change count's uid", true, map[string]any{"change": "set-uid", "operator": "count", "uid": "count-v2"}},
		{"give count a uid", false, map[string]any{"change": "set-uid", "operator": "count", "uid": "count"}},
		{"the same job", false, map[string]any{"change": "none"}},
		{"another parallelism", false, map[string]any{"change": "set-parallelism", "operator": "count", "parallelism": 3}},
		{"another max parallelism", true, map[string]any{"change": "set-max-parallelism", "operator": "count", "maxParallelism": 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := engine.LoadSpec([]byte(job(tc.uids)))
			require.NoError(t, err)
			p, err := newPrediction(&predictFile{Kind: "upgrade-accepted", upgrade: tc.args}, newJobState(MainJob, spec))
			require.NoError(t, err)

			s, err := engine.NewStepper(spec, engine.Options{Dir: t.TempDir()})
			require.NoError(t, err)
			defer s.Close()
			s.Steps(300)
			require.NoError(t, s.Do(engine.Command{Name: engine.CmdTriggerSavepoint}))
			for i := 0; i < 200 && s.Snapshot().Checkpoints.Counts.Completed < 1; i++ {
				s.Steps(50)
			}
			require.Equal(t, 1, s.Snapshot().Checkpoints.Counts.Completed, "savepoint 1 completes")
			args := map[string]any{"checkpoint": 1}
			for k, v := range tc.args {
				args[k] = v
			}
			cmd, err := engineCommand(Action{Name: cmdUpgrade, Args: args}, nil)
			require.NoError(t, err)
			err = s.Do(cmd)
			if err != nil {
				require.True(t, errors.Is(err, engine.ErrNonRestoredState), "refused as Flink refuses, not for a bad command: %v", err)
			}
			assert.Equal(t, yesNo(err == nil), p.Answer, "engine: %v", err)

			if err == nil {
				js := newJobState(MainJob, spec)
				require.NoError(t, js.upgrade(Action{Name: cmdUpgrade, Args: args}))
				var want []string
				for _, o := range s.Snapshot().Job.Operators {
					want = append(want, o.ID)
				}
				var got []string
				for _, o := range js.spec.Operators {
					got = append(got, o.ID)
					assert.Equal(t, js.par[o.ID], parallelismOf(s.Snapshot(), o.ID), "%s's parallelism", o.ID)
				}
				assert.ElementsMatch(t, want, got, "the lint's job is the engine's")
			}
		})
	}
}

func parallelismOf(snap engine.Snapshot, id string) int {
	for _, o := range snap.Job.Operators {
		if o.ID == id {
			return o.Parallelism
		}
	}
	return 0
}
