package web

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseClientMsg(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		wantID   string
		wantCode string
		wantMsg  []string // substrings of the message
		want     Command
	}{
		{name: "not json", in: `{"type":"command",`, wantCode: CodeBadJSON, wantMsg: []string{"not valid JSON", "send one JSON object"}},
		{name: "garbage", in: `hello`, wantCode: CodeBadJSON},
		{name: "array", in: `[1,2]`, wantCode: CodeBadMessage, wantMsg: []string{"JSON object"}},
		{name: "no type", in: `{"id":"c1","name":"pause"}`, wantID: "c1", wantCode: CodeBadMessage, wantMsg: []string{`no "type"`}},
		{name: "unknown type", in: `{"type":"hello","id":"c1"}`, wantID: "c1", wantCode: CodeBadMessage, wantMsg: []string{`unknown message type "hello"`}},
		{name: "type not string", in: `{"type":5,"id":"c1"}`, wantCode: CodeBadMessage, wantMsg: []string{"must be strings"}},
		{name: "no id", in: `{"type":"command","name":"pause"}`, wantCode: CodeBadMessage, wantMsg: []string{`no "id"`}},
		{name: "long id", in: `{"type":"command","id":"` + string(make([]byte, 0)) + `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","name":"pause"}`, wantCode: CodeBadMessage, wantMsg: []string{"at most 64"}},
		{name: "unknown command", in: `{"type":"command","id":"c2","name":"explode"}`, wantID: "c2", wantCode: CodeUnknownCommand, wantMsg: []string{`unknown command "explode"`, "rescale", "crash-taskmanager"}},
		{name: "no name", in: `{"type":"command","id":"c2"}`, wantID: "c2", wantCode: CodeUnknownCommand, wantMsg: []string{"no name"}},
		{name: "pause", in: `{"type":"command","id":"c3","name":"pause"}`, wantID: "c3", want: Command{Name: "pause"}},
		{name: "pause null args", in: `{"type":"command","id":"c3","name":"pause","args":null}`, wantID: "c3", want: Command{Name: "pause"}},
		{name: "pause with arg", in: `{"type":"command","id":"c3","name":"pause","args":{"now":true}}`, wantID: "c3", wantCode: CodeBadArgs, wantMsg: []string{`unknown argument "now"`}},
		{name: "args not object", in: `{"type":"command","id":"c3","name":"rescale","args":[1]}`, wantID: "c3", wantCode: CodeBadArgs, wantMsg: []string{"must be a JSON object"}},
		{name: "rescale", in: `{"type":"command","id":"c1","name":"rescale","args":{"operator":"count","parallelism":3}}`, wantID: "c1", want: Command{Name: "rescale", Operator: "count", Parallelism: 3}},
		{name: "rescale typo", in: `{"type":"command","id":"c1","name":"rescale","args":{"operator":"count","paralelism":3}}`, wantID: "c1", wantCode: CodeBadArgs, wantMsg: []string{`unknown argument "paralelism"`, `{"operator":"count","parallelism":3}`}},
		{name: "rescale string parallelism", in: `{"type":"command","id":"c1","name":"rescale","args":{"operator":"count","parallelism":"3"}}`, wantID: "c1", wantCode: CodeBadArgs, wantMsg: []string{"parallelism must be a whole number"}},
		{name: "rescale fraction", in: `{"type":"command","id":"c1","name":"rescale","args":{"operator":"count","parallelism":2.5}}`, wantID: "c1", wantCode: CodeBadArgs, wantMsg: []string{"whole number"}},
		{name: "rescale missing", in: `{"type":"command","id":"c1","name":"rescale","args":{"operator":"count"}}`, wantID: "c1", wantCode: CodeBadArgs, wantMsg: []string{"required"}},
		{name: "rescale zero", in: `{"type":"command","id":"c1","name":"rescale","args":{"operator":"count","parallelism":0}}`, wantID: "c1", wantCode: CodeBadArgs, wantMsg: []string{"below 1"}},
		{name: "step default", in: `{"type":"command","id":"s","name":"step"}`, wantID: "s", want: Command{Name: "step", Count: 1}},
		{name: "step 5", in: `{"type":"command","id":"s","name":"step","args":{"count":5}}`, wantID: "s", want: Command{Name: "step", Count: 5}},
		{name: "step too many", in: `{"type":"command","id":"s","name":"step","args":{"count":100000}}`, wantID: "s", wantCode: CodeBadArgs, wantMsg: []string{"1 to 10000"}},
		{name: "speed", in: `{"type":"command","id":"s","name":"speed","args":{"factor":2}}`, wantID: "s", want: Command{Name: "speed", Factor: 2}},
		{name: "speed missing", in: `{"type":"command","id":"s","name":"speed"}`, wantID: "s", wantCode: CodeBadArgs, wantMsg: []string{"args.factor", "args.driver"}},
		{name: "speed driver", in: `{"type":"command","id":"s","name":"speed","args":{"driver":"live"}}`, wantID: "s", want: Command{Name: "speed", Driver: "live"}},
		{name: "speed bad driver", in: `{"type":"command","id":"s","name":"speed","args":{"driver":"warp"}}`, wantID: "s", wantCode: CodeBadArgs, wantMsg: []string{`"step"`, `"live"`}},
		{name: "speed too fast", in: `{"type":"command","id":"s","name":"speed","args":{"factor":1000}}`, wantID: "s", wantCode: CodeBadArgs, wantMsg: []string{"0.05 to 100"}},
		{name: "crash subtask", in: `{"type":"command","id":"k","name":"crash-subtask","args":{"operator":"count","index":1}}`, wantID: "k", want: Command{Name: "crash-subtask", Operator: "count", Index: 1}},
		{name: "crash subtask no index", in: `{"type":"command","id":"k","name":"crash-subtask","args":{"operator":"count"}}`, wantID: "k", wantCode: CodeBadArgs},
		{name: "crash tm", in: `{"type":"command","id":"k","name":"crash-taskmanager","args":{"taskManager":"tm-1"}}`, wantID: "k", want: Command{Name: "crash-taskmanager", TaskManager: "tm-1"}},
		{name: "restart tm empty", in: `{"type":"command","id":"k","name":"restart-taskmanager","args":{"taskManager":""}}`, wantID: "k", wantCode: CodeBadArgs, wantMsg: []string{"taskManager is required"}},
		{name: "add tm", in: `{"type":"command","id":"k","name":"add-taskmanager"}`, wantID: "k", want: Command{Name: "add-taskmanager"}},
		{name: "add tm with slots", in: `{"type":"command","id":"k","name":"add-taskmanager","args":{"slots":3}}`, wantID: "k", want: Command{Name: "add-taskmanager", Slots: 3}},
		{name: "add tm zero slots", in: `{"type":"command","id":"k","name":"add-taskmanager","args":{"slots":0}}`, wantID: "k", wantCode: CodeBadArgs, wantMsg: []string{"slots 0 is out of range", "1 to 64"}},
		{name: "add tm too many slots", in: `{"type":"command","id":"k","name":"add-taskmanager","args":{"slots":99}}`, wantID: "k", wantCode: CodeBadArgs, wantMsg: []string{"1 to 64"}},
		{name: "inject", in: `{"type":"command","id":"i","name":"inject","args":{"text":"to be"}}`, wantID: "i", want: Command{Name: "inject", Text: "to be", Partition: -1}},
		{name: "inject partition", in: `{"type":"command","id":"i","name":"inject","args":{"text":"to be","partition":2}}`, wantID: "i", want: Command{Name: "inject", Text: "to be", Partition: 2}},
		{name: "inject blank", in: `{"type":"command","id":"i","name":"inject","args":{"text":"  "}}`, wantID: "i", wantCode: CodeBadArgs, wantMsg: []string{"blank"}},
		{name: "reset", in: `{"type":"command","id":"r","name":"reset","args":{"seed":7,"driver":"live"}}`, wantID: "r", want: Command{Name: "reset", Seed: 7, Driver: "live"}},
		{name: "reset bad driver", in: `{"type":"command","id":"r","name":"reset","args":{"driver":"turbo"}}`, wantID: "r", wantCode: CodeBadArgs, wantMsg: []string{`driver "turbo" is unknown`}},
		{name: "trailing data", in: `{"type":"command","id":"r","name":"pause"} {}`, wantCode: CodeBadJSON},
		{name: "snapshot", in: `{"type":"command","id":"x","name":"snapshot"}`, wantID: "x", want: Command{Name: "snapshot"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, cmd, _, pe := parseClientMsg([]byte(tt.in))
			assert.Equal(t, tt.wantID, id)
			if tt.wantCode == "" {
				require.Nil(t, pe, "unexpected error %v", pe)
				assert.Equal(t, tt.want, cmd)
				return
			}
			require.NotNil(t, pe)
			assert.Equal(t, tt.wantCode, pe.Code, pe.Message)
			for _, s := range tt.wantMsg {
				assert.Contains(t, pe.Message, s)
			}
		})
	}
}

func TestEveryCommandHasAParser(t *testing.T) {
	for _, n := range commandNames {
		def, ok := commands[n]
		require.True(t, ok, n)
		require.NotNil(t, def.parse, n)
	}
	assert.Len(t, commands, len(commandNames))
	// The list, spelled exactly.
	assert.Equal(t, []string{"pause", "resume", "step", "speed", "crash-subtask", "crash-taskmanager", "restart-taskmanager",
		"add-taskmanager", "trigger-checkpoint", "trigger-savepoint", "rescale", "inject", "reset", "snapshot"}, commandNames[:14])
	// Time travel and classrooms add theirs (timetravel.go).
	assert.Subset(t, commandNames, []string{"seek", "fork"})
}

func TestCheckAgainstJob(t *testing.T) {
	snap := newTestEngine(1).Snapshot()
	tests := []struct {
		name     string
		cmd      Command
		wantCode string
		wantMsg  []string
	}{
		{name: "rescale within max", cmd: Command{Name: "rescale", Operator: "count", Parallelism: 128}},
		{name: "rescale above max", cmd: Command{Name: "rescale", Operator: "count", Parallelism: 129}, wantCode: CodeBadArgs,
			wantMsg: []string{"parallelism 129 is above the max parallelism 128 of operator count", "choose 1 to 128"}},
		{name: "rescale unknown operator", cmd: Command{Name: "rescale", Operator: "counter", Parallelism: 3}, wantCode: CodeBadArgs,
			wantMsg: []string{`no operator "counter"`, "source, count, sink"}},
		{name: "crash index out of range", cmd: Command{Name: "crash-subtask", Operator: "count", Index: 2}, wantCode: CodeBadArgs,
			wantMsg: []string{"count has 2 subtasks", "from 0 to 1"}},
		{name: "crash negative index", cmd: Command{Name: "crash-subtask", Operator: "count", Index: -1}, wantCode: CodeBadArgs},
		{name: "crash ok", cmd: Command{Name: "crash-subtask", Operator: "sink", Index: 0}},
		{name: "unknown tm", cmd: Command{Name: "crash-taskmanager", TaskManager: "tm-9"}, wantCode: CodeBadArgs, wantMsg: []string{"tm-1, tm-2"}},
		{name: "inject partition out of range", cmd: Command{Name: "inject", Text: "a", Partition: 4}, wantCode: CodeBadArgs, wantMsg: []string{"4 partitions", "0 to 3"}},
		{name: "inject into count", cmd: Command{Name: "inject", Text: "a", Partition: -1, Operator: "count"}, wantCode: CodeBadArgs, wantMsg: []string{"only be typed into a source"}},
		{name: "inject default source", cmd: Command{Name: "inject", Text: "a", Partition: 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.cmd
			pe := checkAgainstJob(&cmd, &snap)
			if tt.wantCode == "" {
				require.Nil(t, pe)
				return
			}
			require.NotNil(t, pe)
			assert.Equal(t, tt.wantCode, pe.Code)
			for _, s := range tt.wantMsg {
				assert.Contains(t, pe.Message, s)
			}
		})
	}
}
