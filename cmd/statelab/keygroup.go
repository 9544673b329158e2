package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/statelab/statelab/rescale"
)

func init() {
	register(command{name: "keygroup", summary: "show the Java hashCode, key group and owning subtask of keys, as Flink computes them", run: runKeyGroup})
	register(command{name: "ranges", summary: "show the key-group range of every subtask, as Flink assigns them", run: runRanges})
}

// keyTypes are the key types whose Java hashCode StateLab reproduces.
var keyTypes = map[string]bool{"string": true, "int": true, "long": true}

// checkParallelismFlags checks --max-parallelism / --parallelism and applies
// Flink's defaults and bounds. A max parallelism of 0 means "Flink's default for P".
func checkParallelismFlags(io IO, cmd string, maxP, p int, pSet bool) (int, int, bool) {
	if !pSet {
		usageError(io, cmd, "--parallelism is required (a whole number from 1 to %d)", rescale.UpperBoundMaxParallelism)
		return 0, 0, false
	}
	if maxP == 0 {
		if p < 1 || p > rescale.UpperBoundMaxParallelism {
			usageError(io, cmd, "parallelism %d is not within 1..%d", p, rescale.UpperBoundMaxParallelism)
			return 0, 0, false
		}
		maxP = rescale.DefaultMaxParallelism(p)
	}
	if err := rescale.CheckParallelism(p, maxP); err != nil {
		usageError(io, cmd, "%s", strings.TrimPrefix(err.Error(), "rescale: "))
		return 0, 0, false
	}
	return maxP, p, true
}

func runKeyGroup(_ context.Context, args []string, io IO) int {
	fs := newFlagSet("keygroup")
	maxP := fs.Int("max-parallelism", 0, "number of key groups (default: Flink's default for --parallelism)")
	p := fs.Int("parallelism", 0, "operator parallelism (required)")
	keyType := fs.String("key-type", "string", "key type: string, int or long (java.lang.String / Integer / Long)")
	asJSON := fs.Bool("json", false, "print one JSON object per key")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if !keyTypes[*keyType] {
		code, _ := usageError(io, fs.Name(), "unknown key type %q (allowed: string, int, long)", *keyType)
		return code
	}
	m, par, ok := checkParallelismFlags(io, fs.Name(), *maxP, *p, flagSet(fs, "parallelism"))
	if !ok {
		return exitUsage
	}

	out := bufio.NewWriterSize(io.Out, 64<<10)
	defer out.Flush()
	var buf []byte
	emit := func(key string) error {
		var hash int32
		switch *keyType {
		case "string":
			hash = rescale.JavaStringHashCode(key)
		case "int":
			v, err := strconv.ParseInt(strings.TrimSpace(key), 10, 32)
			if err != nil {
				return fmt.Errorf("key %q is not an int: want a whole number from -2147483648 to 2147483647", key)
			}
			hash = rescale.JavaIntHashCode(int32(v))
			key = strconv.FormatInt(v, 10)
		case "long":
			v, err := strconv.ParseInt(strings.TrimSpace(key), 10, 64)
			if err != nil {
				return fmt.Errorf("key %q is not a long: want a whole number from -9223372036854775808 to 9223372036854775807", key)
			}
			hash = rescale.JavaLongHashCode(v)
			key = strconv.FormatInt(v, 10)
		}
		g := rescale.KeyGroupForKeyHash(hash, m)
		idx := rescale.OperatorIndexForKeyGroup(m, par, g)
		buf = buf[:0]
		if *asJSON {
			buf = append(buf, `{"key":`...)
			if *keyType == "string" {
				buf = appendJSONString(buf, key)
			} else {
				buf = append(buf, key...)
			}
			buf = append(buf, `,"javaHash":`...)
			buf = strconv.AppendInt(buf, int64(hash), 10)
			buf = append(buf, `,"keyGroup":`...)
			buf = strconv.AppendInt(buf, int64(g), 10)
			buf = append(buf, `,"operatorIndex":`...)
			buf = strconv.AppendInt(buf, int64(idx), 10)
			buf = append(buf, `,"maxParallelism":`...)
			buf = strconv.AppendInt(buf, int64(m), 10)
			buf = append(buf, `,"parallelism":`...)
			buf = strconv.AppendInt(buf, int64(par), 10)
			buf = append(buf, "}\n"...)
		} else {
			buf = append(buf, key...)
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, int64(hash), 10)
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, int64(g), 10)
			buf = append(buf, '\t')
			buf = strconv.AppendInt(buf, int64(idx), 10)
			buf = append(buf, '\n')
		}
		_, err := out.Write(buf)
		return err
	}

	if fs.NArg() > 0 {
		for _, k := range fs.Args() {
			if err := emit(k); err != nil {
				out.Flush()
				code, _ := usageError(io, fs.Name(), "%v", err)
				return code
			}
		}
		return exitOK
	}
	sc := bufio.NewScanner(io.In)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		// A string key is the whole line, tabs included; only the line end
		// (LF or CRLF) is not part of it.
		k := strings.TrimSuffix(sc.Text(), "\r")
		if err := emit(k); err != nil {
			out.Flush()
			code, _ := usageError(io, fs.Name(), "stdin line %d: %v", line, err)
			return code
		}
	}
	if err := sc.Err(); err != nil {
		out.Flush()
		code, _ := usageError(io, fs.Name(), "read stdin line %d: %v (lines may be at most 16 MiB)", line+1, err)
		return code
	}
	return exitOK
}

func runRanges(_ context.Context, args []string, io IO) int {
	fs := newFlagSet("ranges")
	maxP := fs.Int("max-parallelism", 0, "number of key groups (default: Flink's default for --parallelism)")
	p := fs.Int("parallelism", 0, "operator parallelism (required)")
	asJSON := fs.Bool("json", false, "print one JSON object per subtask")
	if code, done := parseFlags(fs, args, io); done {
		return code
	}
	if fs.NArg() > 0 {
		code, _ := usageError(io, fs.Name(), "unexpected argument %q (ranges takes only flags)", fs.Arg(0))
		return code
	}
	m, par, ok := checkParallelismFlags(io, fs.Name(), *maxP, *p, flagSet(fs, "parallelism"))
	if !ok {
		return exitUsage
	}
	out := bufio.NewWriter(io.Out)
	defer out.Flush()
	for i, r := range rescale.KeyGroupRanges(m, par) {
		if *asJSON {
			fmt.Fprintf(out, `{"subtask":%d,"start":%d,"end":%d,"maxParallelism":%d,"parallelism":%d}`+"\n", i, r.Start, r.End, m, par)
		} else {
			fmt.Fprintf(out, "%d\t%d\t%d\n", i, r.Start, r.End)
		}
	}
	return exitOK
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// the character Java reads in its place (and hashes).
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				buf = append(buf, '\\', c)
			case c == '\n':
				buf = append(buf, '\\', 'n')
			case c == '\r':
				buf = append(buf, '\\', 'r')
			case c == '\t':
				buf = append(buf, '\\', 't')
			case c < 0x20 || c == 0x7f:
				buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				buf = append(buf, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			buf = append(buf, `\ufffd`...)
		} else if r == '\u2028' || r == '\u2029' {
			buf = append(buf, `\u202`...)
			buf = append(buf, hex[r&0xf])
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return append(buf, '"')
}
