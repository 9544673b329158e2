package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/statelab/statelab/rescale"
)

func init() {
	register(command{name: "repartition", summary: "redistribute operator state (split, union, broadcast) to a new parallelism, as Flink does", run: runRepartition})
}

// orderedStates keeps one old subtask's states in the order they appear in
// the JSON object: it is the order the operator registered them.
type orderedStates []rescale.NamedState[string]

func (o *orderedStates) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("an old subtask must be an object mapping state names to {\"mode\":…,\"elements\":[…]}, got %s", b)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		var s struct {
			Mode     *string  `json:"mode"`
			Elements []string `json:"elements"`
		}
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("state %q: %w", name, err)
		}
		if s.Mode == nil {
			return fmt.Errorf("state %q has no \"mode\" (want SPLIT_DISTRIBUTE, UNION or BROADCAST)", name)
		}
		m, err := rescale.ParseMode(*s.Mode)
		if err != nil {
			return fmt.Errorf("state %q: %s", name, strings.TrimPrefix(err.Error(), "rescale: "))
		}
		if s.Elements == nil {
			s.Elements = []string{}
		}
		*o = append(*o, rescale.NamedState[string]{Name: name, Mode: m, Elements: s.Elements})
	}
	_, err = dec.Token()
	return err
}

func runRepartition(_ context.Context, args []string, stdio IO) int {
	fs := newFlagSet("repartition")
	if code, done := parseFlags(fs, args, stdio); done {
		return code
	}
	const shape = `{"newParallelism":N,"subtasks":[{"<state>":{"mode":"SPLIT_DISTRIBUTE|UNION|BROADCAST","elements":["…"]}}, …]}`
	if fs.NArg() > 0 {
		code, _ := usageError(stdio, fs.Name(), "unexpected argument %q: repartition reads %s from stdin", fs.Arg(0), shape)
		return code
	}
	data, err := io.ReadAll(stdio.In)
	if err != nil {
		code, _ := usageError(stdio, fs.Name(), "read stdin: %v", err)
		return code
	}
	var in struct {
		NewParallelism *int            `json:"newParallelism"`
		Subtasks       []orderedStates `json:"subtasks"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		code, _ := usageError(stdio, fs.Name(), "malformed input: %v; want %s", err, shape)
		return code
	}
	if dec.More() {
		code, _ := usageError(stdio, fs.Name(), "malformed input: extra data after the JSON document; want one %s", shape)
		return code
	}
	if in.NewParallelism == nil {
		code, _ := usageError(stdio, fs.Name(), "missing \"newParallelism\" (a whole number from 1 to %d)", rescale.UpperBoundMaxParallelism)
		return code
	}
	if len(in.Subtasks) == 0 {
		code, _ := usageError(stdio, fs.Name(), "\"subtasks\" is empty: give one object per old subtask, e.g. %s", shape)
		return code
	}
	old := make([]rescale.SubtaskState[string], len(in.Subtasks))
	for i, s := range in.Subtasks {
		old[i] = rescale.SubtaskState[string](s)
	}
	res, err := rescale.Repartition(old, *in.NewParallelism)
	if err != nil {
		code, _ := usageError(stdio, fs.Name(), "%s", strings.TrimPrefix(err.Error(), "rescale: "))
		return code
	}
	out := struct {
		Subtasks []map[string][]string `json:"subtasks"`
	}{res}
	enc := json.NewEncoder(stdio.Out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stdio.Err, "statelab repartition: write stdout: %v\n", err)
		return exitFail
	}
	return exitOK
}
