package web

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Fuzz targets for the two parsers that read what anyone may send: the
// protocol's client messages and share links. CI runs each for a bounded
// time (docs/security.md):
//
//	go test -run '^$' -fuzz '^FuzzParseClientMsg$' -fuzztime 20s ./web/
//	go test -run '^$' -fuzz '^FuzzShareLink$' -fuzztime 20s ./web/
//
// Without -fuzz they run their seed corpus as ordinary tests.

// FuzzParseClientMsg: any frame is either refused with a code and a message
// or parsed into a command the protocol knows, whose numbers are in range.
func FuzzParseClientMsg(f *testing.F) {
	for _, s := range []string{
		`{"type":"command","id":"c1","name":"pause"}`,
		`{"type":"command","id":"c2","name":"rescale","args":{"operator":"count","parallelism":3}}`,
		`{"type":"command","id":"c3","name":"step","args":{"count":10000}}`,
		`{"type":"command","id":"c4","name":"speed","args":{"factor":2,"driver":"live"}}`,
		`{"type":"command","id":"c5","name":"inject","args":{"text":"to be or not","partition":1}}`,
		`{"type":"command","id":"c6","name":"add-taskmanager","args":{"slots":2}}`,
		`{"type":"command","id":"c7","name":"fork","args":{"step":-1}}`,
		`{"type":"command","id":"c8","name":"reset","args":{"seed":42,"driver":"step"}}`,
		`{"type":"command","id":"x","name":"rescale","args":{"operator":"count","parallelism":1e309}}`,
		`[1,2]`, `null`, `{"type":"command"}`, "\xff\xfe", `{"type":"command","id":"c","name":"inject","args":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		id, cmd, def, pe := parseClientMsg(data)
		if pe != nil {
			if pe.Code == "" || pe.Message == "" {
				t.Fatalf("refusal without a code or message: %+v", pe)
			}
			return
		}
		if def.parse == nil || cmd.Name == "" || id == "" || len(id) > maxIDLen {
			t.Fatalf("accepted %q as %+v (id %q)", data, cmd, id)
		}
		if _, ok := commands[cmd.Name]; !ok {
			t.Fatalf("accepted unknown command %q", cmd.Name)
		}
		switch cmd.Name {
		case CmdStep:
			if cmd.Count < 1 || cmd.Count > maxStepCount {
				t.Fatalf("step count %d accepted", cmd.Count)
			}
		case CmdSpeed:
			if cmd.Factor != 0 && (cmd.Factor < minSpeed || cmd.Factor > maxSpeed) {
				t.Fatalf("speed %g accepted", cmd.Factor)
			}
		case CmdRescale:
			if cmd.Parallelism < 1 {
				t.Fatalf("parallelism %d accepted", cmd.Parallelism)
			}
		case CmdAddTaskManager:
			if cmd.Slots < 0 || cmd.Slots > maxTaskManagerSlots {
				t.Fatalf("slots %d accepted", cmd.Slots)
			}
		}
	})
}

// FuzzShareLink: any link value is refused with ErrBadArgs or decodes into
// a scenario that encodes back to the same scenario; checking it against
// the bounds never panics, and a scenario that passes stays within them.
func FuzzShareLink(f *testing.F) {
	for _, sc := range []Scenario{
		{Format: ScenarioFormat, Version: ScenarioVersion, Template: "wordcount", Settings: map[string]string{"keys": "50"}, Seed: 1, Step: 100},
		{Format: ScenarioFormat, Version: ScenarioVersion, Template: "clicks", Settings: map[string]string{"interval": "1ms"}, Seed: 2, Step: 500000},
		{Format: ScenarioFormat, Version: ScenarioVersion, Lesson: "01-why-state", Job: "main", Settings: map[string]string{}, Seed: 3, Step: 10},
	} {
		v, err := ShareLink(sc)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v)
	}
	f.Add("")
	f.Add("!!!")
	f.Add("AAAA")
	lim := DefaultLimits
	f.Fuzz(func(t *testing.T, link string) {
		sc, err := ParseShareLink(link)
		if err != nil {
			return
		}
		again, err := ShareLink(sc)
		if err != nil {
			t.Fatalf("a parsed scenario does not encode: %v", err)
		}
		back, err := ParseShareLink(again)
		if err != nil {
			t.Fatalf("a re-encoded scenario does not parse: %v", err)
		}
		a, _ := json.Marshal(sc)
		b, _ := json.Marshal(back)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("round trip changed the scenario:\n%s\n%s", a, b)
		}
		run, pe := runWithin(sc, lim)
		if pe != nil {
			return
		}
		if sc.Step > lim.ReplaySteps || len(sc.Commands) > lim.Commands {
			t.Fatalf("a scenario over the bounds passed: step %d, %d commands", sc.Step, len(sc.Commands))
		}
		for _, o := range run.Spec.Operators {
			if o.Parallelism > lim.Parallelism {
				t.Fatalf("operator %s at parallelism %d passed", o.ID, o.Parallelism)
			}
		}
	})
}
