package web

import (
	"regexp"
	"strings"
)

// The Performance page in Chinese: statelab bench writes its case names,
// baselines, notes and chart words in English (bench.json and the committed
// SVGs stay so, as the command's own output), and the page translates them
// as it draws the table and the charts. The names are built from a few
// templates with numbers in them (bench/*.go: "engine word count, memory,
// p=%d"), so a rule is a whole-name pattern, not a word list: a name no rule
// matches stays in English, and TestBenchChineseCoversEveryName fails for
// it, run over the committed report and a fresh run of every group.

// zhExact are whole texts: chart words, series names, fixed baselines.
var zhExact = map[string]string{
	// Chart words (bench/chart.go, bench/output.go).
	"no data":            "无数据",
	"%s: %s at %s":       "%s：%[3]s 时为 %[2]s",
	"%s: %.3gx":          "%s：%.3gx",
	"slope %.2f":         "斜率 %.2f",
	" (was %.3gx)":       "（上次 %.3gx）",
	"target %s %.3gx":    "目标 %s %.3gx",
	"previous run %.3gx": "上一次运行 %.3gx",
	"Each case against its baseline (ratio; black tick = target)":                          "每个测试项与其基线之比（对数刻度；黑色刻线 = 目标）",
	"Each case against its baseline (ratio; black tick = target; ring = previous run, %s)": "每个测试项与其基线之比（对数刻度；黑色刻线 = 目标；圆环 = 上一次运行，%s）",
	"state size (keys)":            "状态大小（键数）",
	"bytes written per checkpoint": "每个检查点写入的字节数",
	"synchronous snapshot time":    "同步快照耗时",
	"time":                         "耗时",
	"bytes":                        "字节数",
	"Checkpoint size after 1 % of keys changed":        "1 % 的键改变之后的检查点大小",
	"Checkpoint time after 1 % of keys changed":        "1 % 的键改变之后的检查点耗时",
	"Rescale 2 -> 3: time to restore all new subtasks": "扩缩容 2 → 3：恢复全部新子任务的耗时",
	"Rescale 2 -> 3: bytes read against bytes moved":   "扩缩容 2 → 3：读取的字节数与需要移动的字节数",
	// Series names.
	"full":                     "全量",
	"incremental":              "增量",
	"incremental (mean)":       "增量（平均）",
	"naive hash % parallelism": "朴素取模（hash % 并行度）",
	"key groups":               "按键组",
	"read, naive":              "读取，朴素取模",
	"read, key groups":         "读取，按键组",
	"moved":                    "需要移动的",
	"linear growth":            "线性增长",
	// Baselines with no number in them.
	"bare map[string]int64 increment":         "裸 map[string]int64 自增",
	"bare Pebble Get+Set, WAL off":            "裸 Pebble Get+Set，关闭 WAL",
	"full checkpoint bytes":                   "全量检查点字节数",
	"full checkpoint time":                    "全量检查点耗时",
	"bytes moved":                             "需要移动的字节数",
	"bare word count, p=2, same records":      "裸词频统计，p=2，相同的记录",
	"bare map[string]int64, same key strings": "裸 map[string]int64，相同的键字符串",
	"bare gorilla/websocket hub":              "裸 gorilla/websocket 广播",
	"live heap of one idle sandbox":           "一个空闲沙盒的存活堆内存",
	"ValueState get+update, memory backend":   "ValueState 读取 + 更新，内存状态后端",
	"ValueState get+update, pebble backend":   "ValueState 读取 + 更新，Pebble 状态后端",
	// The peers' descriptions (docs/bench/peers.json).
	"StateLab word count on the Live driver, memory backend, parallelism 2":                               "StateLab 词频统计（Live 驱动），内存状态后端，并行度 2",
	"StateLab word count on the Live driver, pebble backend, parallelism 2":                               "StateLab 词频统计（Live 驱动），Pebble 状态后端，并行度 2",
	"goroutines and channels, batches of 64, a map per key group, parallelism 2":                          "goroutine 与通道，每批 64 条，每个键组一个 map，并行度 2",
	"reugn/go-streams v0.12.0: flow.NewKeyed by word, flow.NewReduce sum per word (in memory)":            "reugn/go-streams v0.12.0：按单词 flow.NewKeyed，每个单词 flow.NewReduce 求和（内存中）",
	"lovoo/goka v1.1.13, group table in memory storage, 2 partitions, franz-go kfake broker on loopback":  "lovoo/goka v1.1.13，组表存于内存，2 个分区，回环地址上的 franz-go kfake broker",
	"lovoo/goka v1.1.13, group table in leveldb storage, 2 partitions, franz-go kfake broker on loopback": "lovoo/goka v1.1.13，组表存于 leveldb，2 个分区，回环地址上的 franz-go kfake broker",
}

// zhRule translates the names with numbers in them; $n are the pattern's
// groups, and a group written ${zh:n} is translated again (a backend, a
// chart title).
type zhRule struct {
	re *regexp.Regexp
	zh string
}

func rule(pattern, zh string) zhRule { return zhRule{regexp.MustCompile("^" + pattern + "$"), zh} }

var zhRules = []zhRule{
	rule(`engine word count, (memory|pebble), p=(\d+)`, "引擎词频统计，${zh:1}，p=${2}"),
	rule(`engine word count, memory, p=(\d+) \(vs words ready-made\)`, "引擎词频统计，内存，p=${1}（对比现成的单词）"),
	rule(`bare word count: source, tokenizer, count, sink as goroutines \+ channels, batches of (\d+), p=(\d+)`,
		"裸词频统计：source、tokenizer、count、sink 各为 goroutine，以通道相连，每批 ${1} 条，p=${2}"),
	rule(`bare keyed count: words ready-made, routed by key group and counted, no tokenizer or sink, p=(\d+)`,
		"裸键控计数：现成的单词按键组路由并计数，没有 tokenizer 和 sink，p=${1}"),
	rule(`bare Pebble Get\+Set, WAL off, (\d+) DB\(s\) in parallel`, "裸 Pebble Get+Set，关闭 WAL，${1} 个 DB 并行"),
	rule(`engine word count, pebble, p=(\d+) \(vs Pebble alone\)`, "引擎词频统计，Pebble，p=${1}（对比单独的 Pebble）"),
	rule(`bare word count on Pebble: source, tokenizer, count \(Pebble Get\+Set, the backend's options\), sink as goroutines \+ channels, p=(\d+)`,
		"Pebble 上的裸词频统计：source、tokenizer、count（Pebble Get+Set，与状态后端相同的选项）、sink 各为 goroutine，以通道相连，p=${1}"),
	rule(`bare Pebble Get\+Set, WAL off, (\d+) DB\(s\) in parallel, words split by owner before the clock, no other stage`,
		"裸 Pebble Get+Set，关闭 WAL，${1} 个 DB 并行，单词在计时前已按所属子任务分好，没有其他阶段"),
	rule(`incremental checkpoint (bytes|time), (.+) keys`, "增量检查点${zh:1}，${2} 个键"),
	rule(`rescale 2->3 time, key groups, (.+) keys`, "扩缩容 2→3 耗时，按键组，${1} 个键"),
	rule(`rescale 2->3 bytes read, (key groups|naive), (.+) keys`, "扩缩容 2→3 读取的字节数，${zh:1}，${2} 个键"),
	rule(`engine word count, memory, p=(\d+), on (\d+) cores?`, "引擎词频统计，内存，p=${1}，${2} 核"),
	rule(`the same at p=(\d+)`, "同一作业在 p=${1} 时"),
	rule(`engine word count time, memory, p=(\d+), (.+) records`, "引擎词频统计耗时，内存，p=${1}，${2} 条记录"),
	rule(`time against records: (.+)`, "耗时与记录数之比：${zh:1}"),
	rule(`bare word count, p=(\d+)`, "裸词频统计，p=${1}"),
	rule(`heap backend bytes per key, ValueState\[int64\], (.+) keys`, "堆状态后端每个键的字节数，ValueState[int64]，${1} 个键"),
	rule(`WebSocket fan-out, (\d+) viewers?`, "WebSocket 扇出，${1} 个观看者"),
	rule(`share-link replay time against steps, default sandbox`, "分享链接回放耗时与步数之比，默认沙盒"),
	rule(`share-link replay time against steps, (.+) keys, (.+) checkpoints`, "分享链接回放耗时与步数之比，${1} 个键，每 ${2} 一次检查点"),
	rule(`target (.+)`, "目标 ${1}"),
	rule(`process RSS, classroom of (\d+) forks`, "进程 RSS，${1} 个分叉的课堂"),
	rule(`(\S+) vs (\S+)`, "${1} 对比 ${2}"),
	rule(`(go-streams|goka-memory|goka-leveldb|bare-batched|statelab-memory|statelab-pebble) \((.+)\)`, "${1}（${zh:2}）"),
	// Notes (bench/*.go r.note).
	rule(`websocket: bare gorilla hub, (\d+) viewers: (.+) events/s`, "websocket：裸 gorilla 广播，${1} 个观看者：${2} 个事件/秒"),
	rule(`websocket: StateLab's web hub was not injected \(Config.WebFanOut\); only the bare hub was timed`,
		"websocket：没有注入 StateLab 的 Web 广播（Config.WebFanOut），只测了裸广播"),
	rule(`sessions: StateLab's web server was not injected \(Config.Sessions\); nothing measured`,
		"sessions：没有注入 StateLab 的 Web 服务器（Config.Sessions），没有测量"),
	rule(`wordcount: (.+) was checked by the engine's sink comparison only: the state inspector did not answer within its 2 s limit`,
		"wordcount：${zh:1} 只由引擎的 sink 比对检查：状态查看器没有在 2 秒内回答"),
	rule(`the peers report holds no StateLab run to compare with \((\d+) systems\)`, "同类系统报告里没有可比较的 StateLab 运行（${1} 个系统）"),
	// A scaling case: a chart's title and one of its series.
	rule(`(.+): ([^:]+)`, "${zh:1}：${zh:2}"),
}

var zhBackend = map[string]string{"memory": "内存", "pebble": "Pebble", "bytes": "字节数", "time": "耗时", "naive": "朴素取模"}

var zhGroupRef = regexp.MustCompile(`\$\{zh:(\d+)\}`)

// benchZH translates one of statelab bench's English texts into Chinese;
// ok is false when no rule knows it (the text comes back unchanged).
func benchZH(s string) (string, bool) {
	if v, ok := zhExact[s]; ok {
		return v, true
	}
	if v, ok := zhBackend[s]; ok {
		return v, true
	}
	for _, r := range zhRules {
		m := r.re.FindStringSubmatchIndex(s)
		if m == nil {
			continue
		}
		ok := true
		tmpl := zhGroupRef.ReplaceAllStringFunc(r.zh, func(ref string) string {
			n := int(ref[len("${zh:")] - '0')
			part := s[m[2*n]:m[2*n+1]]
			v, found := benchZH(part)
			ok = ok && found
			return strings.ReplaceAll(v, "$", "$$")
		})
		if !ok {
			continue
		}
		return string(r.re.ExpandString(nil, tmpl, s, m)), true
	}
	return s, false
}

// zhUnits are the bench's metric units as the table writes them
// (bench.FormatValue).
var zhUnits = strings.NewReplacer(" records/s", " 条记录/秒", " events/s", " 个事件/秒", " log-log slope", "（双对数斜率）")

// benchTranslator is what the Performance page passes through the bench
// texts in lang: English as written, Chinese by benchZH.
func benchTranslator(lang string) func(string) string {
	if lang != "zh" {
		return func(s string) string { return s }
	}
	return func(s string) string {
		v, _ := benchZH(s)
		return v
	}
}
