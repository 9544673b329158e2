package web

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/statelab/statelab/savepoint"
)

// A Flink user opens /savepoint, picks their savepoint's _metadata with the
// visible file input, and sees what the shared KafkaSource savepoint is known
// to hold: format version 4, checkpoint 1, two operators at parallelism 3 and
// max parallelism 128, the source's reader state (SourceReaderState, split
// distributed) on all three subtasks with the Kafka splits of the enumerator's
// ten partitions, then a rescale plan to 2 and Flink's refusal above 128.
func TestBrowserSavepointUploadShowsOperatorsStateAndPlan(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	path, _ := sharedKafkaMetadata(t)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/savepoint?lang=en"))
	b.waitJS(20*time.Second, "the page's script", `document.getElementById('savepoint')?.dataset.ready === 'true'`)
	b.run(chromedp.SetUploadFiles(chromedp.CSS(`#sp-file`), []string{path}))
	b.waitJS(30*time.Second, "the report", `!document.getElementById('sp-summary').hidden && document.querySelectorAll('.sp-operator').length > 0`)
	b.shot("savepoint-01-report")

	assert.Equal(t, "4", eval[string](b, `document.getElementById('sp-version').textContent`))
	assert.Equal(t, "1", eval[string](b, `document.getElementById('sp-checkpoint').textContent`))
	assert.Contains(t, eval[string](b, `document.getElementById('sp-kind').textContent`), "savepoint")
	assert.Equal(t, 2, eval[int](b, `document.querySelectorAll('.sp-operator').length`))
	assert.Equal(t, 2, eval[int](b, `document.querySelectorAll('#sp-graph .sp-node').length`))
	first := eval[string](b, `document.querySelector('.sp-operator').textContent`)
	assert.Contains(t, first, "7d246211b2be972287522fe7978b38c1")
	assert.Contains(t, first, "parallelism 3, max parallelism 128")
	// Reader state on each of the source's three subtasks, ten splits in all, each partition once.
	src := `document.querySelector('.sp-operator[data-operator="cb16aa5adb311e8ac72482def19accbe"]')`
	assert.Equal(t, 3, eval[int](b, src+`.querySelectorAll('.sp-list[data-state="SourceReaderState"]').length`))
	assert.Contains(t, eval[string](b, src+`.textContent`), "SPLIT_DISTRIBUTE")
	splits := eval[[]string](b, `[...`+src+`.querySelectorAll('.sp-value')].map(e => e.textContent)`)
	require.Len(t, splits, 10)
	seen := map[string]bool{}
	for _, s := range splits {
		assert.Contains(t, s, "KafkaPartitionSplit")
		seen[s] = true
	}
	assert.Len(t, seen, 10, "each partition's split once")
	assert.Contains(t, eval[string](b, src+`.querySelector('.sp-coordinator').textContent`), "10 partitions")

	// The plan for parallelism 2.
	b.run(chromedp.SetValue(chromedp.CSS(`#sp-plan-operator`), "cb16aa5adb311e8ac72482def19accbe"),
		chromedp.SetValue(chromedp.CSS(`#sp-plan-parallelism`), "2"))
	b.clickLive(`#sp-plan-go`)
	b.waitJS(20*time.Second, "the plan", `document.querySelectorAll('#sp-plan-table tbody tr').length === 2`)
	total := eval[int](b, `[...document.querySelectorAll('#sp-plan-table .sp-plan-state')].map(e => Number(e.textContent.match(/: (\d+) elements/)[1])).reduce((a, b) => a + b, 0)`)
	assert.Equal(t, 10, total, "every split restored once")
	assert.Equal(t, 128, eval[int](b, `document.querySelectorAll('#sp-plan .sp-kg').length`))
	b.shot("savepoint-02-plan")

	// Above the max parallelism: Flink's refusal, shown.
	b.run(chromedp.SetValue(chromedp.CSS(`#sp-plan-parallelism`), "200"))
	b.clickLive(`#sp-plan-go`)
	b.waitJS(20*time.Second, "the refusal", `!!document.getElementById('sp-plan-error')`)
	assert.Contains(t, eval[string](b, `document.getElementById('sp-plan-error').textContent`), "maximum parallelism (128)")
}

// keyedMetadataFile writes, as MetadataV3Serializer does, a version 3
// _metadata with one keyed operator (parallelism 2, max parallelism 4):
// subtask 0 holds key groups 0-1 inline (offsets 2 and 6 in 10 bytes: 4 and 4
// bytes), subtask 1 key groups 2-3 in a 100-byte file (offsets 1 and 40: 39
// and 60 bytes).
func keyedMetadataFile(t *testing.T) string {
	var b bytes.Buffer
	put := func(vs ...any) {
		for _, v := range vs {
			if s, ok := v.(string); ok {
				require.NoError(t, binary.Write(&b, binary.BigEndian, uint16(len(s))))
				b.WriteString(s)
				continue
			}
			require.NoError(t, binary.Write(&b, binary.BigEndian, v))
		}
	}
	put(int32(0x4960672d), int32(3), int64(7), int32(0), int32(1))
	put(int64(0x0a0b0c0d0e0f1011), int64(0x2122232425262728), int32(2), int32(4), byte(0), int32(2))
	put(int32(0), int32(0), int32(0), byte(12), int32(0), int32(2), int64(2), int64(6), byte(1), "inline", int32(10))
	b.Write(make([]byte, 10))
	put("id-0", byte(0), int32(0), int32(0))
	put(int32(1), int32(0), int32(0), byte(7), int32(2), int32(2), int64(1), int64(40), byte(2), int64(100), "file:/sp/kg-1")
	put(byte(0), int32(0), int32(0))
	p := filepath.Join(t.TempDir(), "_metadata")
	require.NoError(t, os.WriteFile(p, b.Bytes(), 0o600))
	return p
}

// The key-group strip is sized by bytes: each cell as wide as the bytes its
// key group's offsets give it, coloured by the subtask that saved it.
func TestBrowserSavepointKeyGroupStripSizedByBytes(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	path := keyedMetadataFile(t)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/savepoint?lang=zh"))
	b.waitJS(20*time.Second, "the page's script", `document.getElementById('savepoint')?.dataset.ready === 'true'`)
	b.run(chromedp.SetUploadFiles(chromedp.CSS(`#sp-file`), []string{path}))
	b.waitJS(30*time.Second, "the strip", `document.querySelectorAll('.sp-operator .sp-strip .sp-kg').length === 4`)
	b.shot("savepoint-03-keyed-zh")
	got := eval[[]float64](b, `[...document.querySelectorAll('.sp-operator .sp-strip .sp-kg')].map(r => Number(r.getAttribute('width')))`)
	want := []float64{4, 4, 39, 60}
	for i := range want {
		assert.InDelta(t, want[i]/107*1000, got[i], 0.5, "cell %d", i)
	}
	fills := eval[[]string](b, `[...document.querySelectorAll('.sp-operator .sp-strip .sp-kg')].map(r => r.getAttribute('fill'))`)
	assert.Equal(t, fills[0], fills[1])
	assert.NotEqual(t, fills[1], fills[2])
	assert.Contains(t, eval[string](b, `document.querySelector('.sp-operator').textContent`), "最大并行度 4")
}

// With a savepoint shown and a plan drawn, the page fits a phone and a laptop
// and axe-core finds no WCAG 2.1 AA violation, in both languages.
func TestBrowserSavepointReportFitsAndIsAccessible(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	path, _ := sharedKafkaMetadata(t)
	keyed := keyedMetadataFile(t)
	b := newBrowser(t)
	j := newJourney(b, "savepoint")
	for _, size := range [][2]int64{{390, 844}, {1280, 800}} {
		for _, lang := range []string{"en", "zh"} {
			for _, file := range []string{path, keyed} {
				j.run(chromedp.EmulateViewport(size[0], size[1]), chromedp.Navigate(j.url+"/savepoint?lang="+lang))
				j.waitJS(20*time.Second, "the page's script", `document.getElementById('savepoint')?.dataset.ready === 'true'`)
				j.run(chromedp.SetUploadFiles(chromedp.CSS(`#sp-file`), []string{file}))
				j.waitJS(30*time.Second, "the report", `document.querySelectorAll('.sp-operator').length > 0`)
				j.clickLive(`#sp-plan-go`)
				j.waitJS(20*time.Second, "the plan", `document.querySelectorAll('#sp-plan-table tbody tr').length === 2`)
				name := fmt.Sprintf("/savepoint %s %s at %dx%d", filepath.Base(file), lang, size[0], size[1])
				j.fits(name)
				j.accessible(name)
				if file == keyed {
					j.window(fmt.Sprintf("%d-%s-plan", size[0], lang))
				}
			}
		}
	}
}

// operatorStateDir writes a savepoint directory as Flink lays out one whose
// operator state is too large to inline: _metadata (version 4) with one
// operator whose subtask 0 keeps a list state "words" (StringSerializer,
// SPLIT_DISTRIBUTE) in the file "op-0" beside it (RelativeFileStateHandle).
func operatorStateDir(t *testing.T) string {
	var st bytes.Buffer
	put := func(b *bytes.Buffer, vs ...any) {
		for _, v := range vs {
			if s, ok := v.(string); ok {
				require.NoError(t, binary.Write(b, binary.BigEndian, uint16(len(s))))
				b.WriteString(s)
				continue
			}
			require.NoError(t, binary.Write(b, binary.BigEndian, v))
		}
	}
	// OperatorBackendSerializationProxy v6: not compressed, one list state, no broadcast state.
	put(&st, int32(6), false, uint16(1), "words", int32(1), int32(1), "OPERATOR_STATE_DISTRIBUTION_MODE", "SPLIT_DISTRIBUTE",
		int32(1), "VALUE_SERIALIZER", int32(2), "org.apache.flink.api.common.typeutils.base.StringSerializer$StringSerializerSnapshot", int32(3), uint16(0))
	var offsets []int64
	for _, w := range []string{"hello", "world"} {
		offsets = append(offsets, int64(st.Len()))
		st.WriteByte(byte(len(w) + 1)) // StringValue: length+1, then the characters
		st.WriteString(w)
	}
	var md bytes.Buffer
	put(&md, int32(0x4960672d), int32(4), int64(5), int32(0), int32(1))
	put(&md, int64(1), int64(2), int32(1), int32(128), byte(0), int32(1))
	put(&md, int32(0), int32(1), byte(4), int32(1), "words", byte(0), int32(len(offsets)))
	for _, o := range offsets {
		put(&md, o)
	}
	put(&md, byte(6), "op-0", int64(st.Len()))
	put(&md, int32(0), byte(0), byte(0), int32(0), int32(0))
	md.Write([]byte{0xAC, 0xED, 0x00, 0x05, 0x70})
	dir := filepath.Join(t.TempDir(), "savepoint-1a2b3c-4d5e6f7a8b9c")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "_metadata"), md.Bytes(), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "op-0"), st.Bytes(), 0o600))
	return dir
}

// Picking the savepoint directory sends its state files with _metadata, so
// state that is not inline is decoded too.
func TestBrowserSavepointDirectoryPickReadsStateFiles(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	dir := operatorStateDir(t)
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/savepoint?lang=en"))
	b.waitJS(20*time.Second, "the page's script", `document.getElementById('savepoint')?.dataset.ready === 'true'`)
	b.run(chromedp.SetUploadFiles(chromedp.CSS(`#sp-dir`), []string{dir}))
	b.waitJS(30*time.Second, "the report", `document.querySelectorAll('.sp-operator').length > 0`)
	assert.Contains(t, eval[string](b, `document.getElementById('sp-status').textContent`), "Read 1 state files")
	values := eval[[]string](b, `[...document.querySelectorAll('.sp-list[data-state="words"] .sp-value')].map(e => e.textContent)`)
	require.Len(t, values, 2)
	assert.Contains(t, values[0], "hello")
	assert.Contains(t, values[1], "world")
}

// A canonical savepoint Flink 2.3 wrote (savepoint/testdata/flink): the keyed
// operator's card shows its 128 key groups in the strip, its decoded values,
// and that every decoded key sits in the key group Flink's assignment gives it.
func TestBrowserSavepointRealFlinkKeyedState(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	path, err := filepath.Abs(filepath.Join("..", "savepoint", "testdata", "flink", "2.3.0", "rocksdb-inline-savepoint-canonical", "_metadata"))
	require.NoError(t, err)
	_, err = os.Stat(path)
	require.NoError(t, err, "the Flink snapshot the test reads")
	b := newBrowser(t)
	b.run(chromedp.Navigate(b.url + "/savepoint?lang=en"))
	b.waitJS(20*time.Second, "the page's script", `document.getElementById('savepoint')?.dataset.ready === 'true'`)
	b.run(chromedp.SetUploadFiles(chromedp.CSS(`#sp-file`), []string{path}))
	b.waitJS(30*time.Second, "the report", `document.querySelectorAll('.sp-operator').length === 4`)
	card := `[...document.querySelectorAll('.sp-operator')].find(c => c.textContent.includes('counting'))`
	assert.Equal(t, 128, eval[int](b, card+`.querySelectorAll('.sp-strip .sp-kg').length`))
	assert.Equal(t, 2, eval[int](b, card+`.querySelectorAll('.sp-kg-check').length`))
	for _, check := range eval[[]string](b, `[...`+card+`.querySelectorAll('.sp-kg-check')].map(e => e.textContent)`) {
		assert.Regexp(t, `(\d+) of (\d+) agree`, check)
		m := regexp.MustCompile(`(\d+) of (\d+) agree`).FindStringSubmatch(check)
		assert.Equal(t, m[1], m[2], "every decoded key in Flink's key group")
	}
	assert.Contains(t, eval[string](b, card+`.textContent`), `"key-`)
	b.shot("savepoint-04-real-flink")
}

// On the Chinese page, every "not decoded" reason is Chinese: the real
// KafkaSource savepoint, a Flink 2.3 savepoint whose state is in files beside
// _metadata (read alone, so each list says its state is outside the file),
// and a keyed backend of a meta version StateLab does not read. Outside the
// values a reason names (set as code: paths, class names, numbers), no
// English word is left. The same files on the English page show English
// reasons, so the check can see English where it is.
func TestBrowserSavepointReasonsInChinese(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	kafka, _ := sharedKafkaMetadata(t)
	files, err := filepath.Abs(filepath.Join("..", "savepoint", "testdata", "flink", "2.3.0", "hashmap-files-savepoint-canonical", "_metadata"))
	require.NoError(t, err)
	keyed := keyedMetadataFile(t)
	// Words a Chinese reason keeps as they are: the product, Flink's option
	// and file names, and the command to run.
	const english = `(() => {
		const out = [];
		for (const p of document.querySelectorAll('.sp-reason')) {
			const c = p.cloneNode(true);
			c.querySelectorAll('code').forEach((e) => e.remove());
			const rest = c.textContent.replace(/StateLab|Flink \d\.\d+|Flink|_metadata|statelab savepoint inspect|changelog|execution\.checkpointing\.snapshot-compression/g, '');
			out.push({ code: p.dataset.code, text: p.textContent, words: (rest.match(/[A-Za-z]{2,}/g) || []).join(' ') });
		}
		return out;
	})()`
	type reason struct{ Code, Text, Words string }
	b := newBrowser(t)
	for _, lang := range []string{"zh", "en"} {
		seen := map[string]int{}
		for _, file := range []string{kafka, files, keyed} {
			b.run(chromedp.Navigate(b.url + "/savepoint?lang=" + lang))
			b.waitJS(20*time.Second, "the page's script", `document.getElementById('savepoint')?.dataset.ready === 'true'`)
			b.run(chromedp.SetUploadFiles(chromedp.CSS(`#sp-file`), []string{file}))
			b.waitJS(30*time.Second, "the report", `document.querySelectorAll('.sp-operator').length > 0`)
			if lang == "zh" && file == files {
				b.shot("savepoint-05-reasons-zh")
			}
			for _, r := range eval[[]reason](b, english) {
				seen[r.Code]++
				if lang == "zh" {
					assert.NotEmpty(t, r.Code, "%s: a reason without a code: %q", filepath.Base(filepath.Dir(file)), r.Text)
					assert.Empty(t, r.Words, "%s: English in the Chinese reason %q", file, r.Text)
					assert.True(t, strings.HasPrefix(r.Text, "值未解码："), r.Text)
				} else {
					assert.NotEmpty(t, r.Words, "the English reason %q", r.Text)
				}
			}
		}
		assert.Positive(t, seen["outside-metadata"], "%s: the Flink savepoint read alone says its state is outside _metadata (%v)", lang, seen)
		assert.Positive(t, seen["keyed-meta-version"], "%s: the keyed file's meta version (%v)", lang, seen)
	}
}

// damagedKafkaFiles writes copies of the shared KafkaSource _metadata
// damaged at seeded places — cut short, or with bytes changed — each in a
// directory of its own as _metadata: those StateLab's reader refuses, with
// as many different failure codes as the seed gives (up to want), then
// those it still reads. It returns the paths and, for the refused ones,
// the code of the innermost failure the reader gives.
func damagedKafkaFiles(t *testing.T, raw []byte, want, readable int) (refused map[string]string, read []string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(20, 21))
	refused = map[string]string{}
	seen := map[string]bool{}
	write := func(b []byte) string {
		p := filepath.Join(t.TempDir(), "_metadata")
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	for i := 0; i < 2000 && (len(seen) < want || len(read) < readable); i++ {
		d := slices.Clone(raw)
		if i%2 == 0 {
			d = d[:rng.IntN(len(d))]
		} else {
			for range 1 + rng.IntN(3) {
				d[rng.IntN(len(d))] = byte(rng.IntN(256))
			}
		}
		_, err := savepoint.Read(d)
		if err == nil {
			if len(read) < readable && !bytes.Equal(d, raw) {
				read = append(read, write(d))
			}
			continue
		}
		r := savepoint.ReasonOf(err)
		for r.Cause != nil {
			r = *r.Cause
		}
		if len(seen) < want && !seen[r.Code] {
			seen[r.Code] = true
			refused[write(d)] = r.Code
		}
	}
	require.GreaterOrEqual(t, len(seen), 3, "the seeded damage gives at least three failure codes (%v)", seen)
	return refused, read
}

// A Flink user drops a damaged _metadata (the shared KafkaSource savepoint
// cut short or with bytes changed, at seeded places) on the Chinese page:
// the page says why it cannot read it, or what it could not decode, in
// Chinese — the offsets, sizes and versions as values, and no English word
// outside them. The same files on the English page say it in English, so
// the check can see English where it is.
func TestBrowserSavepointDamagedFilesInChinese(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	_, raw := sharedKafkaMetadata(t)
	refused, read := damagedKafkaFiles(t, raw, 6, 3)
	// Every message the page shows about the file: the read error, the
	// properties' and each "not decoded" reason; what is left of each once
	// the values (set as code) and the words a Chinese sentence keeps (the
	// product, Flink, file and command names) are taken out.
	const messages = `(() => {
		const out = [];
		for (const p of document.querySelectorAll('#sp-error, .sp-reason, .sp-failure')) {
			if (p.hidden) continue;
			const c = p.cloneNode(true);
			c.querySelectorAll('code').forEach((e) => e.remove());
			const rest = c.textContent.replace(/StateLab|Flink \d\.\d+|Flink|_metadata|statelab savepoint inspect/g, '');
			const code = p.dataset.code || p.querySelector('[data-code]')?.dataset.code || '';
			out.push({ code, text: p.textContent, words: (rest.match(/[A-Za-z]{2,}/g) || []).join(' ') });
		}
		return out;
	})()`
	type message struct{ Code, Text, Words string }
	b := newBrowser(t)
	show := func(lang, file string) []message {
		b.run(chromedp.Navigate(b.url + "/savepoint?lang=" + lang))
		b.waitJS(20*time.Second, "the page's script", `document.getElementById('savepoint')?.dataset.ready === 'true'`)
		b.run(chromedp.SetUploadFiles(chromedp.CSS(`#sp-file`), []string{file}))
		b.waitJS(30*time.Second, "the page's answer", `!document.getElementById('sp-error').hidden || document.querySelectorAll('.sp-operator').length > 0`)
		return eval[[]message](b, messages)
	}
	codes := map[string]bool{}
	for file, code := range refused {
		got := show("zh", file)
		require.NotEmpty(t, got, "the refusal of a file damaged to %s is shown", code)
		assert.True(t, eval[bool](b, `!document.getElementById('sp-error').hidden`), "%s: the page says it cannot read the file", code)
		for _, m := range got {
			assert.Empty(t, m.Words, "%s: English in the Chinese message %q", code, m.Text)
			assert.Contains(t, m.Text, "无法读取", "%s: %q", code, m.Text)
		}
		// The page's innermost code is the reader's.
		leaf := eval[string](b, `(() => { const all = [...document.querySelectorAll('#sp-error [data-code]')]; return all.length ? all[all.length - 1].dataset.code : ''; })()`)
		assert.NotEmpty(t, leaf, "%s: the message carries its code", code)
		codes[code] = true
		if len(codes) <= 2 {
			b.shot("savepoint-06-damaged-zh-" + code)
			en := show("en", file)
			require.NotEmpty(t, en)
			assert.NotEmpty(t, en[0].Words, "%s: the English page says it in English: %q", code, en[0].Text)
		}
	}
	for _, file := range read {
		for _, m := range show("zh", file) {
			assert.Empty(t, m.Words, "a file read despite its damage: English in the Chinese message %q", m.Text)
		}
	}
	t.Logf("failure codes shown: %v", codes)
}
