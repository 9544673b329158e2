package web

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// asciiWord is a word of English (or of code) in a text: three letters or
// more; a token that starts with a digit (a hex operator ID) is none.
var asciiWord = regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9_]{2,}\b`)

// hanChar is a Chinese character.
var hanChar = regexp.MustCompile(`\p{Han}`)

// zhKeeps returns the Latin words the Chinese catalogue itself keeps inside
// its translated strings (Flink's names: allowNonRestoredState, StateTtlConfig,
// OnReadAndWrite, TaskManager, uid …). A string of the catalogue without a
// Chinese character (one left in English) adds nothing.
func zhKeeps(t *testing.T) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "static", "i18n", "zh.json"))
	require.NoError(t, err)
	var cat map[string]string
	require.NoError(t, json.Unmarshal(raw, &cat))
	keep := map[string]bool{}
	for _, v := range cat {
		if !hanChar.MatchString(v) {
			continue
		}
		for _, w := range asciiWord.FindAllString(v, -1) {
			keep[w] = true
		}
	}
	return keep
}

// englishLeft lists the words of text that are English: Latin words the
// Chinese catalogue does not keep and that are not in also (the job's
// operator names, keys of the data).
func englishLeft(text string, keep map[string]bool, also ...string) []string {
	extra := map[string]bool{}
	for _, a := range also {
		extra[a] = true
	}
	seen := map[string]bool{}
	var out []string
	for _, w := range asciiWord.FindAllString(text, -1) {
		if keep[w] || extra[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	sort.Strings(out)
	return out
}

// jsPartText is the text a person reads in the elements sel selects: what
// they show, their options and their tooltips (title).
func jsPartText(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].flatMap(el => [el.innerText,
	  ...[el, ...el.querySelectorAll('[title]')].filter(x => !x.closest('[hidden]')).map(x => x.title || ''),
	  ...[...el.querySelectorAll('option')].filter(o => !o.closest('[hidden]')).map(o => o.textContent)]).join('\n')`, sel)
}

// jsWiderThanScreen lists the elements under sel whose box reaches past the
// window's edges, leaving out what sits in a container that scrolls sideways
// (a table's wrapper).
func jsWiderThanScreen(sel string) string {
	return fmt.Sprintf(`(() => {
  const w = window.innerWidth, out = [];
  const scrolls = (el) => { for (let p = el.parentElement; p; p = p.parentElement) if (['auto', 'scroll'].includes(getComputedStyle(p).overflowX)) return true; return false; };
  for (const root of document.querySelectorAll(%q)) for (const el of [root, ...root.querySelectorAll('*')]) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || el.closest('[hidden]') || scrolls(el)) continue;
    if (r.left < -0.5 || r.right > w + 0.5) out.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.split(' ')[0] : '') + ' ' + Math.round(r.left) + '–' + Math.round(r.right));
    if (out.length >= 8) break;
  }
  return out;
})()`, sel)
}

// jsScrollsSideways lists the elements sel selects that scroll sideways
// (their content wider than their box).
func jsScrollsSideways(sel string) string {
	return fmt.Sprintf(`[...document.querySelectorAll(%q)].filter(el => el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1).map(el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + ' ' + el.scrollWidth + ' > ' + el.clientWidth)`, sel)
}

// TestJourneyChinesePhone: on a phone (390×844) in Chinese, a person uses
// the sandbox form's state TTL and time-domain fields, the state
// inspector's timers table on the alerts job, and the Upgrade… dialog.
// Each part is labelled in Chinese (no English word the Chinese catalogue
// does not keep), nothing is wider than the screen, and the page does not
// scroll sideways; screenshots: zh-phone-*.png.
func TestJourneyChinesePhone(t *testing.T) {
	t.Parallel() // a tab of its own beside another test's (see sharedBrowser)
	// A busy 2-core machine under -race: room beyond newBrowser's 3 minutes.
	b := newBrowserFor(t, 10*time.Minute, nil)
	j := newJourney(b, "zh-phone")
	keep := zhKeeps(t)
	j.run(chromedp.EmulateViewport(390, 844))
	part := func(name, sel string, want []string, also ...string) {
		t.Helper()
		text := eval[string](j.browserEnv, jsPartText(sel))
		for _, w := range want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: no %q in %q", name, w, text)
			}
		}
		if left := englishLeft(text, keep, also...); len(left) > 0 {
			t.Errorf("%s: English left in Chinese: %v\n  in %q", name, left, text)
		}
		if wide := eval[[]string](j.browserEnv, jsScrollsSideways(sel)); len(wide) > 0 {
			t.Errorf("%s: scrolls sideways:\n  %s", name, strings.Join(wide, "\n  "))
		}
		if wide := eval[[]string](j.browserEnv, jsWiderThanScreen(sel)); len(wide) > 0 {
			t.Errorf("%s: wider than the 390 px screen:\n  %s", name, strings.Join(wide, "\n  "))
		}
		j.fits(name)
	}

	// The sandbox form: alerts, a state TTL of 2 s, its details.
	j.visit("/sandbox?lang=zh")
	j.clickLive(`input[name=template][value=alerts]`)
	j.waitJS(10*time.Second, "the TTL and time-domain fields", jsFieldShown("ttl")+` && `+jsFieldShown("timeDomain"))
	j.choose(`#ttl`, "2s")
	j.waitJS(10*time.Second, "the TTL's details enabled", `!document.getElementById('ttlStateVisibility').disabled`)
	fields := `#sandbox-form .field:has(#ttl), #sandbox-form .field:has(#ttlUpdateType), #sandbox-form .field:has(#ttlStateVisibility), #sandbox-form .field:has(#ttlCleanupFullSnapshot), #sandbox-form .field:has(#timeDomain)`
	part("the sandbox form's TTL fields", fields, []string{"状态 TTL", "过期状态的可见性", "全量快照时清理", "告警的时间语义", "事件时间"})
	j.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('ttl')?.scrollIntoView({block: 'start', behavior: 'instant'})`))
	j.window("sandbox-ttl")

	// The alerts job with that TTL: the inspector's timers on alerts#0.
	j.clickLive(`#sandbox-form button[type=submit]`)
	j.waitJS(30*time.Second, "the live view", `document.getElementById('workspace')?.dataset.ready === 'true' && document.querySelectorAll('.box-button').length > 0`)
	j.faster(2)
	j.waitJS(lessonTickWait, "every subtask running", jsAllRunning)
	j.clickLive(`input[name=tool][value=inspect]`)
	j.clickUntil(`.box-button[data-task="alerts#0"]`, "the timers table of alerts#0", `document.querySelectorAll('#inspector .timers table tbody tr').length > 0`)
	ops := eval[[]string](j.browserEnv, jsSnap+`.job.operators.map(o => o.id)`)
	part("the inspector's timers", `#inspector .timers h3, #inspector .timers thead, #inspector .timers tbody td:nth-child(2)`,
		[]string{"定时器", "水位线", "触发时间", "键组"}, ops...)
	require.Contains(t, eval[string](j.browserEnv, `[...document.querySelectorAll('#inspector table.keyed tbody td[title]')].map(td => td.title).join('\n')`), "最后访问于",
		"the keyed entries' TTL tooltip in Chinese")
	j.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('#inspector .timers')?.scrollIntoView({block: 'start', behavior: 'instant'})`))
	j.window("inspector-timers")

	// The Upgrade… dialog, from a savepoint.
	triggered := eval[int](j.browserEnv, jsSnap+`.checkpoints.counts.triggered`)
	j.clickUntil(`#btn-savepoint`, "a savepoint triggered", fmt.Sprintf(`%s.checkpoints.counts.triggered > %d`, jsSnap, triggered))
	j.waitJS(lessonTickWait, "a retained savepoint", `(`+jsSnap+`.checkpoints.retained || []).some(c => c.savepoint)`)
	j.clickLive(`#btn-upgrade`)
	j.waitJS(10*time.Second, "the upgrade dialog", `document.getElementById('upgrade').open`)
	j.choose(`#upgrade-change`, "set-uid")
	// Operator IDs are hex; the dialog's table shows them.
	ids := eval[[]string](j.browserEnv, jsSnap+`.job.operators.map(o => o.operatorId)`)
	part("the Upgrade… dialog", `#upgrade`, []string{"从保存点升级作业", "启动自", "修改", "算子", "设置算子的 uid", "升级", "关闭"}, append(ops, ids...)...)
	j.accessible("the Upgrade… dialog in Chinese at 390 px")
	j.window("upgrade-dialog")
	j.run(chromedp.Evaluate[chromedp.Void](`document.getElementById('upgrade-submit')?.scrollIntoView({block: 'end', behavior: 'instant'})`))
	j.window("upgrade-dialog-end")
}
