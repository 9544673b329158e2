package savepoint

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

func catalogue(t *testing.T, lang string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "static", "i18n", lang+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s.json: %v", lang, err)
	}
	return m
}

func placeholders(s string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`\{(\w+)\}`).FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// englishOnly are the values a reason carries in English only: the field
// the reader was reading ("what") and a failure's English message
// ("detail"). The Chinese sentences leave them out.
var englishOnly = map[string]bool{"what": true, "detail": true}

// Every reason code has its English sentence in en.json (the same as
// ReasonTexts) and a Chinese one in zh.json that names the same values; the
// catalogues have no reason that the code lacks.
func TestReasonCodesInBothCatalogues(t *testing.T) {
	en, zh := catalogue(t, "en"), catalogue(t, "zh")
	for code, text := range ReasonTexts {
		key := "savepoint.reason." + code
		if en[key] != text {
			t.Errorf("en.json %q = %q, want ReasonTexts' %q", key, en[key], text)
		}
		z, ok := zh[key]
		if !ok {
			t.Errorf("zh.json has no %q (English: %q)", key, text)
			continue
		}
		if !slices.ContainsFunc([]rune(z), func(r rune) bool { return unicode.Is(unicode.Han, r) }) {
			t.Errorf("zh.json %q = %q is not Chinese", key, z)
		}
		// A Chinese sentence names the same values, except the English ones:
		// the field the reader was reading and its English message; it says
		// where by the offset instead.
		want := slices.DeleteFunc(placeholders(text), func(p string) bool { return englishOnly[p] })
		if got := placeholders(z); !slices.Equal(got, want) {
			t.Errorf("zh.json %q names %v, want %v (the English names %v)", key, got, want, placeholders(text))
		}
	}
	for _, cat := range []map[string]string{en, zh} {
		for key := range cat {
			if code, ok := strings.CutPrefix(key, "savepoint.reason."); ok {
				if _, known := ReasonTexts[code]; !known {
					t.Errorf("catalogue key %q: no such reason code", key)
				}
			}
		}
	}
}

// Every place the decoders set a NotDecoded field sets its reason in the
// same statement, and every struct with NotDecoded has NotDecodedReason: a
// new "not decoded" without a code fails here.
func TestEveryNotDecodedHasAReason(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	sites := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		isField := func(e ast.Expr, field string) bool {
			s, ok := e.(*ast.SelectorExpr)
			return ok && s.Sel.Name == field
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				for i, l := range n.Lhs {
					if isField(l, "NotDecoded") {
						sites++
						if len(n.Lhs) != 2 || i != 0 || !isField(n.Lhs[1], "NotDecodedReason") {
							t.Errorf("%s: NotDecoded set without NotDecodedReason", fset.Position(n.Pos()))
						}
					}
				}
			case *ast.CompositeLit:
				var keys []string
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if id, ok := kv.Key.(*ast.Ident); ok {
							keys = append(keys, id.Name)
						}
					}
				}
				if slices.Contains(keys, "NotDecoded") {
					sites++
					if !slices.Contains(keys, "NotDecodedReason") {
						t.Errorf("%s: NotDecoded set without NotDecodedReason", fset.Position(n.Pos()))
					}
				}
			case *ast.StructType:
				var fields []string
				for _, fl := range n.Fields.List {
					for _, id := range fl.Names {
						fields = append(fields, id.Name)
					}
				}
				if slices.Contains(fields, "NotDecoded") && !slices.Contains(fields, "NotDecodedReason") {
					t.Errorf("%s: a struct with NotDecoded but no NotDecodedReason", fset.Position(n.Pos()))
				}
			}
			return true
		})
	}
	if sites < 16 {
		t.Errorf("found %d places that set NotDecoded; the check is not looking where they are", sites)
	}
}

// walkReasons calls f with every notDecoded text and its reason in a
// report's JSON.
func walkReasons(v any, f func(text string, r map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		if text, ok := v["notDecoded"].(string); ok && text != "" {
			r, _ := v["notDecodedReason"].(map[string]any)
			f(text, r)
		}
		for _, x := range v {
			walkReasons(x, f)
		}
	case []any:
		for _, x := range v {
			walkReasons(x, f)
		}
	}
}

func knownReason(t *testing.T, r map[string]any, where string) {
	t.Helper()
	code, _ := r["code"].(string)
	if _, ok := ReasonTexts[code]; !ok {
		t.Errorf("%s: reason code %q is not in ReasonTexts", where, code)
	}
	if c, ok := r["cause"].(map[string]any); ok {
		knownReason(t, c, where)
	}
}

// Every reason a report gives, on the snapshots Flink wrote (read alone, so
// their file state is "outside the _metadata file", and with their
// directories) and on those with their inline state bytes damaged at seeded
// random places, carries a known code, and a code's English sentence is the
// text for the reasons that add no context.
func TestReportReasonsHaveCodes(t *testing.T) {
	metas, _ := filepath.Glob(filepath.Join("testdata", "flink", "*", "*", "_metadata"))
	if len(metas) == 0 {
		t.Fatal("no snapshots in testdata/flink")
	}
	rng := rand.New(rand.NewPCG(20, 13))
	codes := map[string]int{}
	check := func(name string, m *Metadata) {
		b, err := json.Marshal(NewReport(m))
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(b, &v); err != nil {
			t.Fatal(err)
		}
		walkReasons(v, func(text string, r map[string]any) {
			if r == nil {
				t.Errorf("%s: %q has no reason code", name, text)
				return
			}
			knownReason(t, r, name)
			code, _ := r["code"].(string)
			codes[code]++
			if _, wraps := r["cause"]; !wraps {
				var rr Reason
				rb, _ := json.Marshal(r)
				_ = json.Unmarshal(rb, &rr)
				if got := rr.Text(); got != text && !strings.HasSuffix(text, got) {
					t.Errorf("%s: code %s renders %q, the text is %q", name, code, got, text)
				}
			}
		})
	}
	for _, p := range metas {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Read(raw)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		check(p, m)
		dir := filepath.Dir(p)
		m.LoadFiles(os.DirFS(dir), "", 64<<20)
		check(p+" with its directory", m)
		// Damage inline and loaded state bytes.
		for round := range 8 {
			m, _ := Read(raw)
			m.LoadFiles(os.DirFS(dir), "", 64<<20)
			for _, h := range streams(m) {
				if len(h.Data) == 0 {
					continue
				}
				d := slices.Clone(h.Data)
				for range 1 + round {
					d[rng.IntN(len(d))] = byte(rng.IntN(256))
				}
				h.Data = d
			}
			check(p+" damaged", m)
		}
	}
	for _, want := range []string{ReasonOutsideMetadata} {
		if codes[want] == 0 {
			t.Errorf("no report gave %q; the reports seen: %v", want, codes)
		}
	}
	if len(codes) < 4 {
		t.Errorf("only %d reason codes seen (%v): the damage does not reach the decoders", len(codes), codes)
	}
	t.Logf("reason codes seen: %v", codes)
}

// streams lists every stream handle of m's operator and keyed state.
func streams(m *Metadata) []*StreamHandle {
	var out []*StreamHandle
	for _, op := range m.Operators {
		for _, st := range op.Subtasks {
			for _, h := range []*OperatorStateHandle{st.ManagedOperatorState, st.RawOperatorState} {
				if h != nil && h.Delegate != nil {
					out = append(out, h.Delegate)
				}
			}
			for _, h := range []*KeyedHandle{st.ManagedKeyedState, st.RawKeyedState} {
				if h != nil && h.Delegate != nil {
					out = append(out, h.Delegate)
				}
			}
		}
	}
	return out
}

// Every failure of Read on a damaged _metadata — cut short at seeded places,
// or with seeded bytes changed, of every snapshot Flink wrote in testdata —
// has a code of its own (not the catch-all corrupt or unreadable, whose
// sentence can only repeat the English message), every value its sentence
// names is set, and the innermost sentence is the end of the error's
// English text.
func TestReadFailuresHaveCodes(t *testing.T) {
	metas, _ := filepath.Glob(filepath.Join("testdata", "flink", "*", "*", "_metadata"))
	if len(metas) == 0 {
		t.Fatal("no snapshots in testdata/flink")
	}
	rng := rand.New(rand.NewPCG(21, 20))
	codes := map[string]int{}
	try := func(name string, b []byte) {
		_, err := Read(b)
		if err == nil {
			return
		}
		r := ReasonOf(err)
		leaf := r
		for leaf.Cause != nil {
			leaf = *leaf.Cause
		}
		codes[leaf.Code]++
		if leaf.Code == ReasonCorrupt || leaf.Code == ReasonUnreadable {
			t.Errorf("%s: %v has no code of its own (%s)", name, err, leaf.Code)
			return
		}
		for x := &r; x != nil; x = x.Cause {
			if _, ok := ReasonTexts[x.Code]; !ok {
				t.Errorf("%s: code %q is not in ReasonTexts", name, x.Code)
			}
			for _, p := range placeholders(ReasonTexts[x.Code]) {
				if _, ok := x.Args[p]; !ok && p != "cause" {
					t.Errorf("%s: code %s leaves {%s} unset (%v)", name, x.Code, p, err)
				}
			}
		}
		if !strings.HasSuffix(err.Error(), leaf.Text()) {
			t.Errorf("%s: the sentence %q is not the end of %q", name, leaf.Text(), err.Error())
		}
	}
	for _, p := range metas {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			try(p+" cut", raw[:rng.IntN(len(raw))])
			d := slices.Clone(raw)
			for range 1 + rng.IntN(4) {
				d[rng.IntN(len(d))] = byte(rng.IntN(256))
			}
			try(p+" changed", d)
		}
	}
	// The ends of the file: too short for the magic number, versions before
	// and after the ones read.
	raw, err := os.ReadFile(metas[0])
	if err != nil {
		t.Fatal(err)
	}
	try("two bytes", raw[:2])
	for _, v := range []byte{1, 9} {
		d := slices.Clone(raw)
		d[4], d[5], d[6], d[7] = 0, 0, 0, v
		try(fmt.Sprintf("version %d", v), d)
	}
	for _, want := range []string{ReasonTruncated, ReasonBadMagic, ReasonTooShort, ReasonVersionOld, ReasonVersionNew} {
		if codes[want] == 0 {
			t.Errorf("no damage gave %q (seen: %v)", want, codes)
		}
	}
	if len(codes) < 5 {
		t.Errorf("only %d codes seen (%v): the damage does not reach the reader's checks", len(codes), codes)
	}
	t.Logf("codes seen: %v", codes)
}
