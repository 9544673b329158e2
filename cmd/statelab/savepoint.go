package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/statelab/statelab/savepoint"
)

func init() {
	register(command{name: "savepoint", summary: "look inside a real Flink savepoint or checkpoint: 'savepoint inspect PATH', 'savepoint plan PATH --operator ID --parallelism N'", run: runSavepoint})
}

// maxMetadataBytes bounds what the CLI reads into memory. Flink inlines only
// small state into _metadata (state.storage.fs.memory-threshold, 20 KB per
// handle by default), so real files are far smaller.
// The same bound applies to the state files read beside it, in all.
const maxMetadataBytes = 512 << 20

func runSavepoint(ctx context.Context, args []string, io IO) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(io.Out, "Usage: statelab savepoint inspect PATH [--json]")
		fmt.Fprintln(io.Out, "       statelab savepoint plan PATH --operator ID --parallelism N [--json]")
		fmt.Fprintln(io.Out, "PATH is a _metadata file or the savepoint/checkpoint directory that holds it.")
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	switch args[0] {
	case "inspect":
		return runSavepointInspect(args[1:], io)
	case "plan":
		return runSavepointPlan(args[1:], io)
	}
	code, _ := usageError(io, "statelab savepoint", "unknown subcommand %q (want inspect or plan)", args[0])
	return code
}

// parseInterspersed parses flags that may come before or after the
// positional arguments ("inspect PATH --json") and returns the positionals.
func parseInterspersed(fs *flag.FlagSet, args []string, io IO) ([]string, int, bool) {
	var pos []string
	for {
		if code, done := parseFlags(fs, args, io); done {
			return nil, code, true
		}
		if fs.NArg() == 0 {
			return pos, exitOK, false
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// loadMetadata reads PATH (a _metadata file, or a directory holding one).
func loadMetadata(path string) (*savepoint.Metadata, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, path, fmt.Errorf("cannot read %s: %w", path, unwrapPathErr(err))
	}
	if st.IsDir() {
		path = filepath.Join(path, "_metadata")
		if st, err = os.Stat(path); err != nil {
			return nil, path, fmt.Errorf("the directory has no _metadata file (%w); give the savepoint's or checkpoint's directory, e.g. .../savepoint-1a2b3c-4d5e6f7a8b9c", unwrapPathErr(err))
		}
	}
	if st.Size() > maxMetadataBytes {
		return nil, path, fmt.Errorf("%s is %d bytes, more than the %d MiB this command reads", path, st.Size(), maxMetadataBytes>>20)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, path, fmt.Errorf("cannot read %s: %w", path, unwrapPathErr(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMetadataBytes+1))
	if err != nil {
		return nil, path, fmt.Errorf("cannot read %s: %w", path, unwrapPathErr(err))
	}
	m, err := savepoint.Read(b)
	if err != nil {
		return nil, path, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "savepoint: "))
	}
	// State too large to inline sits in files beside _metadata; read those
	// (never outside the directory) so their values decode too.
	dir, err := filepath.Abs(filepath.Dir(path))
	if err == nil {
		if root, err := os.OpenRoot(dir); err == nil {
			m.LoadFiles(root.FS(), dir, maxMetadataBytes)
			root.Close()
		}
	}
	return m, path, nil
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func runSavepointInspect(args []string, io IO) int {
	fs := newFlagSet("savepoint inspect")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	pos, code, done := parseInterspersed(fs, args, io)
	if done {
		return code
	}
	if len(pos) != 1 {
		code, _ := usageError(io, fs.Name(), "want exactly one PATH (a _metadata file or a savepoint directory), got %d", len(pos))
		return code
	}
	m, path, err := loadMetadata(pos[0])
	if err != nil {
		code, _ := usageError(io, fs.Name(), "%v", err)
		return code
	}
	rep := savepoint.NewReport(m)
	if *asJSON {
		if err := json.NewEncoder(io.Out).Encode(rep); err != nil {
			return exitFail
		}
		return exitOK
	}
	out := bufio.NewWriter(io.Out)
	defer out.Flush()
	writeSavepointReport(out, path, rep)
	return exitOK
}

func writeSavepointReport(out *bufio.Writer, path string, rep *savepoint.Report) {
	fmt.Fprintf(out, "%s: Flink checkpoint metadata, format version %d, checkpoint %d, %s\n", path, rep.Version, rep.CheckpointID, bytesText(int64(rep.Size)))
	if p := rep.Properties; p != nil {
		kind := "checkpoint"
		if p.IsSavepoint() {
			kind = "savepoint"
		}
		fmt.Fprintf(out, "A %s (%s", kind, p.SnapshotType)
		if p.Name != "" {
			fmt.Fprintf(out, " %q", p.Name)
		}
		if p.FormatType != "" {
			fmt.Fprintf(out, ", %s format", p.FormatType)
		}
		fmt.Fprintln(out, ")")
	} else if rep.PropertiesError != "" {
		fmt.Fprintf(out, "Checkpoint properties not read: %s\n", rep.PropertiesError)
	}
	if rep.LoadedFiles > 0 {
		fmt.Fprintf(out, "Read %d state %s beside it.\n", rep.LoadedFiles, plural(rep.LoadedFiles, "file", "files"))
	}
	for _, p := range rep.FileProblems {
		fmt.Fprintf(out, "Not read: %s\n", p)
	}
	fmt.Fprintf(out, "%d master %s, %d %s\n", len(rep.MasterStates), plural(len(rep.MasterStates), "state", "states"), len(rep.Operators), plural(len(rep.Operators), "operator", "operators"))
	for _, ms := range rep.MasterStates {
		fmt.Fprintf(out, "  master state %q (version %d): %s\n", ms.Name, ms.Version, bytesText(int64(ms.Bytes)))
	}
	for _, op := range rep.Operators {
		fmt.Fprintf(out, "\nOperator %s", op.ID)
		if op.Name != "" || op.UID != "" {
			fmt.Fprintf(out, " (name %q, uid %q)", op.Name, op.UID)
		}
		fmt.Fprintf(out, ": parallelism %d, max parallelism %d, state %s\n", op.Parallelism, op.MaxParallelism, bytesText(op.StateBytes))
		if op.FullyFinished {
			fmt.Fprintln(out, "  every subtask had finished; no state")
		}
		if op.CoordinatorBytes > 0 {
			fmt.Fprintf(out, "  coordinator state: %s", bytesText(op.CoordinatorBytes))
			if c := op.Coordinator; c != nil && len(c.KafkaPartitions) > 0 {
				fmt.Fprintf(out, " (a KafkaSource enumerator with %d assigned partitions)", len(c.KafkaPartitions))
			}
			fmt.Fprintln(out)
		}
		for _, st := range op.Subtasks {
			if st.Finished {
				fmt.Fprintf(out, "  subtask %d: finished\n", st.Subtask)
				continue
			}
			if len(st.OperatorState) == 0 && len(st.KeyedState) == 0 && len(st.RawOperatorState) == 0 && len(st.RawKeyedState) == 0 && st.ChannelBytes == 0 {
				fmt.Fprintf(out, "  subtask %d: no state\n", st.Subtask)
				continue
			}
			fmt.Fprintf(out, "  subtask %d:\n", st.Subtask)
			writeLists(out, "operator state", st.OperatorState)
			writeLists(out, "raw operator state", st.RawOperatorState)
			for _, k := range append(append([]savepoint.ReportKeyed{}, st.KeyedState...), st.RawKeyedState...) {
				fmt.Fprintf(out, "    keyed state: key groups [%d, %d], %s (%s, %s)\n", k.Start, k.End, bytesText(k.Bytes), k.Kind, k.Location)
				writeKeyedValues(out, k.Values)
			}
			if st.ChannelBytes > 0 {
				fmt.Fprintf(out, "    in-flight data (unaligned checkpoint): %d input, %d output handles, %s\n", st.InputChannels, st.OutputChannels, bytesText(st.ChannelBytes))
			}
		}
	}
}

func writeLists(out *bufio.Writer, what string, ls []savepoint.ReportList) {
	for _, l := range ls {
		fmt.Fprintf(out, "    %s %q: %s, %d %s, %s\n", what, l.Name, l.Mode, l.Elements, plural(l.Elements, "element", "elements"), bytesText(l.Bytes))
		for i, e := range l.Values {
			if i == 8 {
				fmt.Fprintf(out, "      … %d more\n", len(l.Values)-i)
				break
			}
			v, _ := json.Marshal(e.Value)
			fmt.Fprintf(out, "      [%d] %s %s\n", i, e.Type, v)
		}
		if l.NotDecoded != "" {
			fmt.Fprintf(out, "      values not decoded: %s\n", l.NotDecoded)
		}
	}
}

func writeKeyedValues(out *bufio.Writer, v *savepoint.KeyedValues) {
	if v == nil {
		return
	}
	for _, st := range v.States {
		fmt.Fprintf(out, "      %q (%s): %d %s\n", st.Name, st.StateType, st.Entries, plural(st.Entries, "entry", "entries"))
		for i, e := range st.Samples {
			if i == 5 {
				fmt.Fprintf(out, "        … (%d decoded here, %d in all)\n", len(st.Samples), st.Entries)
				break
			}
			k, _ := json.Marshal(e.Key)
			if e.Namespace != nil {
				ns, _ := json.Marshal(e.Namespace)
				k = append(append(k, " in "...), ns...)
			}
			val, _ := json.Marshal(e.Value)
			if e.UserKey != nil {
				uk, _ := json.Marshal(e.UserKey)
				fmt.Fprintf(out, "        key group %d: %s[%s] = %s\n", e.KeyGroup, k, uk, val)
			} else {
				fmt.Fprintf(out, "        key group %d: %s = %s\n", e.KeyGroup, k, val)
			}
		}
		if st.NotDecoded != "" {
			fmt.Fprintf(out, "        values not decoded: %s\n", st.NotDecoded)
		}
	}
	if v.KeyGroupChecked > 0 {
		fmt.Fprintf(out, "      key groups recomputed with Flink's assignment: %d of %d keys agree\n", v.KeyGroupChecked-v.KeyGroupMismatches, v.KeyGroupChecked)
	}
	if v.NotDecoded != "" {
		fmt.Fprintf(out, "      keyed values not decoded: %s\n", v.NotDecoded)
	}
}

func runSavepointPlan(args []string, io IO) int {
	fs := newFlagSet("savepoint plan")
	opKey := fs.String("operator", "", "the operator: its id (32 hex digits), uid or name (required)")
	par := fs.Int("parallelism", 0, "the new parallelism (required)")
	asJSON := fs.Bool("json", false, "print the plan as one JSON object")
	pos, code, done := parseInterspersed(fs, args, io)
	if done {
		return code
	}
	if len(pos) != 1 {
		code, _ := usageError(io, fs.Name(), "want exactly one PATH (a _metadata file or a savepoint directory), got %d", len(pos))
		return code
	}
	if *opKey == "" || !flagSet(fs, "parallelism") {
		code, _ := usageError(io, fs.Name(), "--operator and --parallelism are required (run 'statelab savepoint inspect PATH' to list the operators)")
		return code
	}
	m, _, err := loadMetadata(pos[0])
	if err != nil {
		code, _ := usageError(io, fs.Name(), "%v", err)
		return code
	}
	op, err := m.FindOperator(*opKey)
	if err != nil {
		code, _ := usageError(io, fs.Name(), "%s", strings.TrimPrefix(err.Error(), "savepoint: "))
		return code
	}
	p, err := savepoint.NewPlan(op, *par)
	if err != nil {
		msg := strings.TrimPrefix(strings.TrimPrefix(err.Error(), "savepoint: "), "rescale: ")
		code, _ := usageError(io, fs.Name(), "%s", msg)
		return code
	}
	if *asJSON {
		if err := json.NewEncoder(io.Out).Encode(p); err != nil {
			return exitFail
		}
		return exitOK
	}
	out := bufio.NewWriter(io.Out)
	defer out.Flush()
	fmt.Fprintf(out, "Restore operator %s with parallelism %d (was %d; max parallelism %d, so %d key groups).\n",
		p.Operator, p.To, p.From, p.MaxParallelism, p.MaxParallelism)
	fmt.Fprintf(out, "%d of %d key groups change owner.\n", len(p.MovedKeyGroups), p.MaxParallelism)
	for _, st := range p.Subtasks {
		fmt.Fprintf(out, "\nnew subtask %d: key groups %s\n", st.Subtask, st.Range)
		for _, r := range st.KeyedReads {
			whole := ""
			if r.WholeHandle {
				whole = ", the whole handle (no per-key-group offsets)"
			}
			fmt.Fprintf(out, "  keyed: reads key groups %s of old subtask %d, %s%s\n", r.Range, r.OldSubtask, bytesText(r.Bytes), whole)
		}
		for _, s := range st.OperatorState {
			refs := make([]string, len(s.Elements))
			for i, e := range s.Elements {
				refs[i] = fmt.Sprintf("%d#%d", e.OldSubtask, e.Index)
			}
			fmt.Fprintf(out, "  %q (%s): %d %s from old subtask#element %s, %s\n", s.Name, s.Mode, len(s.Elements), plural(len(s.Elements), "element", "elements"), strings.Join(refs, " "), bytesText(s.Bytes))
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(out, "\nNote: %s.\n", n)
	}
	return exitOK
}
