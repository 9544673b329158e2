package web

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/catalog"
	"github.com/statelab/statelab/engine"
)

// protoSample is a valid value of a catalogue argument, as JSON would carry it.
func protoSample(a catalog.Arg) any {
	switch {
	case len(a.Values) > 0:
		return a.Values[0]
	case a.Type == catalog.Bool:
		return true
	case a.Type == catalog.Text && a.Name == "taskManager":
		return "tm-1"
	case a.Type == catalog.Text:
		return "count"
	case a.HasMin:
		return a.Min
	}
	return 1
}

// wrongType is a value of the wrong JSON type for a.
func wrongType(a catalog.Arg) any {
	if a.Type == catalog.Text {
		return 7
	}
	return "seven"
}

func parseArgs(t *testing.T, name string, args map[string]any) (Command, commandDef, *protoError) {
	t.Helper()
	msg := map[string]any{"type": "command", "id": "c1", "name": name}
	if args != nil {
		msg["args"] = args
	}
	data, err := json.Marshal(msg)
	require.NoError(t, err)
	_, cmd, def, pe := parseClientMsg(data)
	return cmd, def, pe
}

// The protocol parser, the classroom's follower rule and the scenario
// checker agree with the command catalogue (package catalog): every
// command has a parser; a message with the catalogue's arguments parses,
// one with an unknown, mistyped, missing or out-of-bounds argument is
// refused as bad-args; a follower may send exactly the catalogue's follower
// commands; and a scenario may carry exactly the recorded commands, at the
// catalogue's bounds.
func TestCommandCatalogue(t *testing.T) {
	assert.Equal(t, catalog.Names(nil), commandNames)
	for name := range commands {
		_, ok := catalog.Lookup(name)
		assert.True(t, ok, "web parses %s, which the catalogue does not list", name)
	}
	for _, cmd := range catalog.Commands {
		t.Run(cmd.Name, func(t *testing.T) {
			require.Contains(t, commands, cmd.Name, "the catalogue lists %s, which web cannot parse", cmd.Name)
			valid := map[string]any{}
			for _, a := range cmd.Args {
				if a.Required || len(cmd.OneOf) > 0 && a.Name == cmd.OneOf[0] {
					valid[a.Name] = protoSample(a)
				}
			}
			_, def, pe := parseArgs(t, cmd.Name, valid)
			require.Nil(t, pe, "%s %v", cmd.Name, valid)
			assert.Equal(t, !cmd.Follower, def.control, "%s: a follower may send it: %v", cmd.Name, cmd.Follower)

			with := func(k string, v any) map[string]any {
				m := map[string]any{}
				for kk, vv := range valid {
					m[kk] = vv
				}
				m[k] = v
				return m
			}
			refused := func(args map[string]any, why string) {
				t.Helper()
				_, _, pe := parseArgs(t, cmd.Name, args)
				if assert.NotNil(t, pe, "%s %v: %s", cmd.Name, args, why) {
					assert.Equal(t, CodeBadArgs, pe.Code, pe.Message)
				}
			}
			accepted := func(args map[string]any, why string) {
				t.Helper()
				_, _, pe := parseArgs(t, cmd.Name, args)
				assert.Nil(t, pe, "%s %v: %s", cmd.Name, args, why)
			}
			refused(with("noSuchArgument", 1), "an unknown argument")
			if len(cmd.OneOf) > 0 {
				refused(map[string]any{}, "none of "+strings.Join(cmd.OneOf, ", "))
			}
			for _, a := range cmd.Args {
				accepted(with(a.Name, protoSample(a)), "a valid "+a.Name)
				refused(with(a.Name, wrongType(a)), a.Name+" of the wrong type")
				if a.Required {
					without := with(a.Name, nil)
					delete(without, a.Name)
					refused(without, "without "+a.Name)
				}
				if a.HasMin {
					accepted(with(a.Name, a.Min), fmt.Sprintf("%s at its least, %g", a.Name, a.Min))
					below := a.Min - 1
					if a.Type == catalog.Number {
						below = a.Min / 2
					}
					refused(with(a.Name, below), fmt.Sprintf("%s below %g", a.Name, a.Min))
				}
				if a.HasMax {
					accepted(with(a.Name, a.Max), fmt.Sprintf("%s at its most, %g", a.Name, a.Max))
					refused(with(a.Name, a.Max+1), fmt.Sprintf("%s above %g", a.Name, a.Max))
				}
				if a.MaxRunes > 0 {
					accepted(with(a.Name, strings.Repeat("字", a.MaxRunes)), "the longest "+a.Name)
					refused(with(a.Name, strings.Repeat("字", a.MaxRunes+1)), a.Name+" too long")
				}
				for _, v := range a.Values {
					accepted(with(a.Name, v), a.Name+" "+v)
				}
				if len(a.Values) > 0 {
					refused(with(a.Name, "no-such-value"), a.Name+" outside its values")
				}
			}

			// The scenario checker takes the command as the engine logs it
			// exactly when the catalogue says it is recorded, at its bounds.
			most := map[string]any{}
			for k, v := range valid {
				most[k] = v
			}
			for _, a := range cmd.Args {
				switch {
				case a.HasMax:
					most[a.Name] = a.Max
				case a.MaxRunes > 0:
					most[a.Name] = strings.Repeat("字", a.MaxRunes)
				}
			}
			parsed, _, pe := parseArgs(t, cmd.Name, most)
			require.Nil(t, pe, "%s %v", cmd.Name, most)
			sc := Scenario{Step: 10, Commands: []engine.LoggedCommand{{Step: 5, Command: engineCommand(parsed)}}}
			if cmd.Recorded {
				assert.Nil(t, checkScenarioCommands(sc), "a scenario carries %s %v", cmd.Name, most)
			} else {
				assert.NotNil(t, checkScenarioCommands(sc), "the engine does not log %s, so a scenario may not carry it", cmd.Name)
			}
		})
	}
}
