package org.statelab.flinkref;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichFlatMapFunction;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.BroadcastState;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ReadOnlyBroadcastState;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.CheckpointableKeyedStateBackend;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.Collector;

/** StateLab's built-in operators (engine/operators.go) written against Flink's DataStream API. */
final class Ops {
    private Ops() {}

    static Map<String, Object> event(String kind, String op, int subtask, int attempt) {
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("event", kind);
        e.put("task", op + "#" + subtask);
        e.put("operator", op);
        e.put("subtask", subtask);
        e.put("attempt", attempt);
        return e;
    }

    /**
     * tokenizer: a line's words (ASCII white space), lower-cased, key = word, value 1, the line's timestamp. It
     * keeps no state; it is a CheckpointedFunction only so that a fault can name its snapshot
     * (Faults.snapshot; Flink takes it after the task forwarded the checkpoint's barrier).
     */
    static final class Tokenizer extends RichFlatMapFunction<Rec, Rec> implements CheckpointedFunction {
        private final String id;
        private String task;

        Tokenizer(String id) {
            this.id = id;
        }

        @Override
        public void open(OpenContext ctx) {
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            task = id + "#" + i;
            Trace.event(event("open", id, i, getRuntimeContext().getTaskInfo().getAttemptNumber()));
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) {}

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) {
            Faults.snapshot(task, ctx.getCheckpointId());
        }

        @Override
        public void flatMap(Rec r, Collector<Rec> out) {
            Faults.record(task);
            String s = r.text;
            int i = 0;
            while (i < s.length()) {
                while (i < s.length() && isSpace(s.charAt(i))) {
                    i++;
                }
                int j = i;
                while (j < s.length() && !isSpace(s.charAt(j))) {
                    j++;
                }
                if (j > i) {
                    out.collect(new Rec(s.substring(i, j).toLowerCase(Locale.ROOT), 1, "", r.ts));
                }
                i = j;
            }
        }

        private static boolean isSpace(char c) {
            return c == ' ' || c == '\t' || c == '\n' || c == '\r';
        }
    }

    /** map: fn identity | upper | lower | length. */
    static final class MapFn extends RichMapFunction<Rec, Rec> {
        private final String id;
        private final String fn;
        private String task;

        MapFn(String id, String fn) {
            this.id = id;
            this.fn = fn == null ? "identity" : fn;
        }

        @Override
        public void open(OpenContext ctx) {
            task = id + "#" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        }

        @Override
        public Rec map(Rec r) {
            Faults.record(task);
            Rec o = new Rec(r.key, r.value, r.text, r.ts);
            switch (fn) {
                case "upper" -> o.key = r.key.toUpperCase(Locale.ROOT);
                case "lower" -> o.key = r.key.toLowerCase(Locale.ROOT);
                case "length" -> o.value = r.key.codePointCount(0, r.key.length());
                default -> {}
            }
            return o;
        }
    }

    /** filter: drops keys in exclude and keys shorter than minLength (in code points). */
    static final class FilterFn extends RichFlatMapFunction<Rec, Rec> {
        private final String id;
        private final List<String> exclude;
        private final int minLength;
        private String task;

        FilterFn(String id, List<String> exclude, int minLength) {
            this.id = id;
            this.exclude = exclude;
            this.minLength = minLength;
        }

        @Override
        public void open(OpenContext ctx) {
            task = id + "#" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        }

        @Override
        public void flatMap(Rec r, Collector<Rec> out) {
            Faults.record(task);
            if (r.key.codePointCount(0, r.key.length()) >= minLength && !exclude.contains(r.key)) {
                out.collect(r);
            }
        }
    }

    /**
     * count / sum: keyed ValueState named "count" / "sum"; each record emits the key's new total. An operator
     * (not a function) so it can report the key-group range its keyed state backend was given and the keys
     * it restored.
     */
    static final class KeyedAggregate extends AbstractStreamOperator<Rec> implements OneInputStreamOperator<Rec, Rec> {
        private final String id;
        private final String stateName;
        private final boolean count;
        private final StateTtlConfig ttl;
        private transient ValueState<Long> value;
        private transient String task;
        /**
         * Set by the runner for a scenario (keysOnly): the open and close events name the keys held
         * (KeyedStateBackend.getKeys) without reading their values, as a read of an expired TTL value clears it
         * (AbstractTtlDecorator) and would change what the next snapshot holds.
         */
        static volatile boolean keysOnly;

        KeyedAggregate(String id, boolean count, StateTtlConfig ttl) {
            this.id = id;
            this.count = count;
            this.ttl = ttl;
            this.stateName = count ? "count" : "sum";
        }

        @Override
        public void initializeState(StateInitializationContext ctx) throws Exception {
            super.initializeState(ctx);
        }

        @Override
        public void open() throws Exception {
            super.open();
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            task = id + "#" + i;
            ValueStateDescriptor<Long> d = new ValueStateDescriptor<>(stateName, Types.LONG);
            if (ttl != null) {
                d.enableTimeToLive(ttl);
            }
            value = getPartitionedState(d);
            Map<String, Object> e = event("open", id, i, getRuntimeContext().getTaskInfo().getAttemptNumber());
            KeyGroupRange kg = ((CheckpointableKeyedStateBackend<?>) getKeyedStateBackend()).getKeyGroupRange();
            e.put("keyGroups", Map.of("start", kg.getStartKeyGroup(), "end", kg.getEndKeyGroup()));
            e.put("maxParallelism", getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks());
            e.put("parallelism", getRuntimeContext().getTaskInfo().getNumberOfParallelSubtasks());
            e.put("stateBackend", getKeyedStateBackend().getClass().getSimpleName());
            e.put("restoredKeyNames", keyNames());
            e.put("restoredKeys", keysOnly ? Map.of() : dump());
            Trace.event(e);
        }

        /** Every key this subtask holds state for, expired TTL values too; no value is read. */
        private List<String> keyNames() throws Exception {
            List<String> out = new ArrayList<>();
            try (java.util.stream.Stream<?> keys = getKeyedStateBackend().getKeys(stateName, VoidNamespace.INSTANCE)) {
                keys.forEach(k -> out.add((String) k));
            }
            java.util.Collections.sort(out);
            return out;
        }

        /** Every key this subtask holds state for, with its value. */
        private Map<String, Long> dump() throws Exception {
            Map<String, Long> out = new TreeMap<>();
            Object saved = getCurrentKey();
            List<Object> keys = new ArrayList<>();
            getKeyedStateBackend().getKeys(stateName, VoidNamespace.INSTANCE).forEach(keys::add);
            for (Object k : keys) {
                setCurrentKey(k);
                Long v = value.value();
                if (v != null) {
                    out.put((String) k, v);
                }
            }
            if (saved != null) {
                setCurrentKey(saved);
            }
            return out;
        }

        @Override
        public void processElement(StreamRecord<Rec> el) throws Exception {
            Faults.record(task);
            Rec r = el.getValue();
            Long cur = value.value();
            long v = (cur == null ? 0 : cur) + (count ? 1 : r.value);
            value.update(v);
            output.collect(el.replace(new Rec(r.key, v, "", r.ts)));
        }

        @Override
        public void snapshotState(StateSnapshotContext ctx) throws Exception {
            Faults.snapshot(task, ctx.getCheckpointId());
            super.snapshotState(ctx);
        }

        @Override
        public void close() throws Exception {
            if (value != null) {
                Map<String, Object> e = event("close", id, getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
                        getRuntimeContext().getTaskInfo().getAttemptNumber());
                e.put("keyNames", keyNames());
                e.put("keys", keysOnly ? Map.of() : dump());
                Trace.event(e);
            }
            super.close();
        }
    }

    /**
     * alerts: a KeyedProcessFunction (StateLab's engine/keyedprocess.go, Flink's CountWithTimeoutFunction): an
     * event waits in MapState "pending" with an event-time timer at its timestamp; when the watermark passes it,
     * it joins the key's session ("count", "last") and a timer at last + timeout is registered. A timer at
     * last + timeout alerts (key, count) and clears the key. One Flink timer may stand for both (timers are
     * de-duplicated per key and time): the alert is checked first, then the pending events, which is the order
     * StateLab fires its two namespaces in. Timers are never deleted here, so a shared timer stays; a stale
     * alert timer finds last moved on and does nothing.
     */
    static final class Alerts extends KeyedProcessFunction<String, Rec, Rec> {
        private final String id;
        private final long timeout;
        private final StateTtlConfig ttl;
        private transient MapState<Long, Long> pending;
        private transient ValueState<Long> last;
        private transient ValueState<Long> count;
        private transient String task;

        Alerts(String id, long timeout, StateTtlConfig ttl) {
            this.id = id;
            this.timeout = timeout;
            this.ttl = ttl;
        }

        @Override
        public void open(OpenContext ctx) {
            task = id + "#" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            MapStateDescriptor<Long, Long> p = new MapStateDescriptor<>("pending", Types.LONG, Types.LONG);
            ValueStateDescriptor<Long> l = new ValueStateDescriptor<>("last", Types.LONG);
            ValueStateDescriptor<Long> c = new ValueStateDescriptor<>("count", Types.LONG);
            if (ttl != null) {
                p.enableTimeToLive(ttl);
                l.enableTimeToLive(ttl);
                c.enableTimeToLive(ttl);
            }
            pending = getRuntimeContext().getMapState(p);
            last = getRuntimeContext().getState(l);
            count = getRuntimeContext().getState(c);
        }

        @Override
        public void processElement(Rec r, Context ctx, Collector<Rec> out) throws Exception {
            Faults.record(task);
            Long n = pending.get(r.ts);
            pending.put(r.ts, n == null ? 1L : n + 1);
            ctx.timerService().registerEventTimeTimer(r.ts);
        }

        /** What the current key's state needs a timer at ts for: "event", "alert", "event+alert" or "stale". */
        String role(long ts) throws Exception {
            Long l = last.value();
            boolean alert = l != null && ts == l + timeout;
            boolean ev = pending.contains(ts);
            return ev && alert ? "event+alert" : ev ? "event" : alert ? "alert" : "stale";
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Rec> out) throws Exception {
            Long l = last.value();
            if (l != null && ts == l + timeout) {
                Long c = count.value();
                out.collect(new Rec(ctx.getCurrentKey(), c == null ? 0 : c,
                        "no event for " + Specs.goDuration(timeout) + " after " + Specs.goDuration(l), ts));
                last.clear();
                count.clear();
                // Which subtask's timer alerted, for which key and session: the conformance tests check that a timer
                // pending at a savepoint fires after a rescale on the subtask that owns its key group then.
                int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
                Map<String, Object> e = event("alert", id, i, getRuntimeContext().getTaskInfo().getAttemptNumber());
                e.put("key", ctx.getCurrentKey());
                e.put("timer", ts);
                e.put("last", l);
                Trace.event(e);
            }
            Long n = pending.get(ts);
            if (n != null) {
                pending.remove(ts);
                Long c = count.value();
                last.update(ts);
                count.update((c == null ? 0 : c) + n);
                ctx.timerService().registerEventTimeTimer(ts + timeout);
            }
        }
    }

    /**
     * The alerts function's operator: Flink's own KeyedProcessOperator (what {@code KeyedStream.process} builds), with
     * two things the conformance tests read. At open, after the restore, it lists the event-time timers the subtask
     * restored (InternalTimerService.forEachEventTimeTimer, as the State Processor API reads them): key, timestamp,
     * and what the function's state still needs the timer for — the events pending at that time ("event"), the
     * key's alert deadline ("alert"), both, or nothing ("stale": Alerts never deletes a timer). And it keeps each
     * subtask's current watermark, so that a phase stops with a savepoint only once every alerts subtask's
     * watermark has caught up with the records its sources were held at (Runner's awaitWatermark).
     */
    static final class AlertsOperator
            extends org.apache.flink.streaming.api.operators.KeyedProcessOperator<String, Rec, Rec> {
        private static final long serialVersionUID = 1L;
        /** Per task ("alerts#1"): its current watermark in this phase. */
        static final Map<String, Long> watermarks = new java.util.concurrent.ConcurrentHashMap<>();
        private final String id;
        private transient String task;

        AlertsOperator(String id, Alerts fn) {
            super(fn);
            this.id = id;
        }

        @Override
        public void open() throws Exception {
            super.open();
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            task = id + "#" + i;
            Alerts fn = (Alerts) getUserFunction();
            List<Map<String, Object>> timers = new ArrayList<>();
            org.apache.flink.streaming.api.operators.InternalTimerService<?> ts0 = getInternalTimerService(
                    "user-timers", org.apache.flink.runtime.state.VoidNamespaceSerializer.INSTANCE, this);
            ts0.forEachEventTimeTimer((ns, ts) -> {
                        Map<String, Object> t = new LinkedHashMap<>();
                        t.put("key", getCurrentKey());
                        t.put("timestamp", ts);
                        t.put("role", fn.role(ts));
                        timers.add(t);
                    });
            Map<String, Object> e = event("timers", id, i, getRuntimeContext().getTaskInfo().getAttemptNumber());
            e.put("timers", timers);
            // The subtask's event time as it opens, after the restore: its timer service's current watermark
            e.put("watermark", ts0.currentWatermark());
            Trace.event(e);
        }

        /** Notes the subtask's event time (its timer service's current watermark) at each checkpoint it takes. */
        @Override
        public void snapshotState(org.apache.flink.runtime.state.StateSnapshotContext context) throws Exception {
            super.snapshotState(context);
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            Map<String, Object> e = event("snapshot", id, i, getRuntimeContext().getTaskInfo().getAttemptNumber());
            e.put("checkpoint", context.getCheckpointId());
            e.put("watermark", getInternalTimerService("user-timers",
                    org.apache.flink.runtime.state.VoidNamespaceSerializer.INSTANCE, this).currentWatermark());
            Trace.event(e);
        }

        @Override
        public void processWatermark(org.apache.flink.streaming.api.watermark.Watermark mark) throws Exception {
            super.processWatermark(mark);
            watermarks.put(task, mark.getTimestamp());
        }
    }

    /**
     * alerts with timeDomain: processing (StateLab's engine/keyedprocess.go processProcTime): the processing-time
     * CountWithTimeoutFunction of Flink's documentation. Each event counts into the key's session ("count"),
     * sets "last" to the current processing time and moves the key's processing-time timer to last + timeout
     * (the previous one deleted, as StateLab does); the timer at last + timeout alerts (key, count) and clears
     * the key. The alert's timestamp is the timer's, a processing time.
     */
    static final class ProcAlerts extends KeyedProcessFunction<String, Rec, Rec> {
        private final String id;
        private final long timeout;
        private final StateTtlConfig ttl;
        private transient ValueState<Long> last;
        private transient ValueState<Long> count;
        private transient String task;

        ProcAlerts(String id, long timeout, StateTtlConfig ttl) {
            this.id = id;
            this.timeout = timeout;
            this.ttl = ttl;
        }

        /** When this attempt of the subtask opened (wall clock, ms): after a restore, when its timers came back. */
        private transient long openedAt;

        @Override
        public void open(OpenContext ctx) {
            task = id + "#" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            openedAt = System.currentTimeMillis();
            ValueStateDescriptor<Long> l = new ValueStateDescriptor<>("last", Types.LONG);
            ValueStateDescriptor<Long> c = new ValueStateDescriptor<>("count", Types.LONG);
            if (ttl != null) {
                l.enableTimeToLive(ttl);
                c.enableTimeToLive(ttl);
            }
            last = getRuntimeContext().getState(l);
            count = getRuntimeContext().getState(c);
        }

        @Override
        public void processElement(Rec r, Context ctx, Collector<Rec> out) throws Exception {
            Faults.record(task);
            long now = ctx.timerService().currentProcessingTime();
            Long l = last.value();
            if (l != null && l != now) {
                ctx.timerService().deleteProcessingTimeTimer(l + timeout);
            }
            Long c = count.value();
            last.update(now);
            count.update((c == null ? 0 : c) + 1);
            ctx.timerService().registerProcessingTimeTimer(now + timeout);
        }

        @Override
        public void onTimer(long ts, OnTimerContext ctx, Collector<Rec> out) throws Exception {
            Long l = last.value();
            if (l != null && ts == l + timeout) {
                Long c = count.value();
                out.collect(new Rec(ctx.getCurrentKey(), c == null ? 0 : c,
                        "no event for " + Specs.goDuration(timeout) + " after " + Specs.goDuration(l), ts));
                last.clear();
                count.clear();
                // When the timer fired against when it was due and when the subtask opened (wall clock, ms): a
                // timer restored already due fires at once (InternalTimerServiceImpl.startTimerService).
                int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
                Map<String, Object> e = event("alert", id, i, getRuntimeContext().getTaskInfo().getAttemptNumber());
                e.put("key", ctx.getCurrentKey());
                e.put("timer", ts);
                e.put("last", l);
                e.put("firedAt", System.currentTimeMillis());
                e.put("openedAt", openedAt);
                Trace.event(e);
            }
        }
    }

    /**
     * tally: forwards records and keeps this subtask's count in union ListState "tallies"; after a restore
     * every subtask receives every old subtask's entry (Flink's getUnionListState).
     */
    static final class Tally extends RichMapFunction<Rec, Rec> implements CheckpointedFunction {
        private final String id;
        private transient ListState<String> list;
        private transient long baseline;
        private transient long seen;
        private transient String task;
        private transient int index;

        Tally(String id) {
            this.id = id;
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            list = ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("tallies", Types.STRING));
            index = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            task = id + "#" + index;
            List<String> restored = new ArrayList<>();
            long total = 0;
            if (ctx.isRestored()) {
                for (String s : list.get()) {
                    restored.add(s);
                    total += Long.parseLong(s.replaceAll(".*\"count\":(\\d+).*", "$1"));
                }
            }
            if (index == 0) {
                baseline = total;
            }
            Map<String, Object> e = event("open", id, index, getRuntimeContext().getTaskInfo().getAttemptNumber());
            e.put("restored", ctx.isRestored());
            e.put("operatorState", Map.of("tallies", restored));
            Trace.event(e);
        }

        @Override
        public Rec map(Rec r) {
            Faults.record(task);
            seen++;
            return r;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            Faults.snapshot(task, ctx.getCheckpointId());
            list.update(List.of("{\"subtask\":" + index + ",\"count\":" + (baseline + seen) + "}"));
        }
    }

    /**
     * broadcast-filter: rules ("block w" / "allow w") from the broadcast input in BroadcastState "rules";
     * drops main-input records whose key is blocked.
     */
    static final class BroadcastFilter extends BroadcastProcessFunction<Rec, Rec, Rec> implements CheckpointedFunction {
        static final MapStateDescriptor<String, String> RULES =
                new MapStateDescriptor<>("rules", Types.STRING, Types.STRING);
        private final String id;
        private transient String task;

        BroadcastFilter(String id) {
            this.id = id;
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            BroadcastState<String, String> st = ctx.getOperatorStateStore().getBroadcastState(RULES);
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            task = id + "#" + i;
            List<String> restored = new ArrayList<>();
            for (Map.Entry<String, String> e : st.entries()) {
                restored.add(e.getKey() + "=" + e.getValue());
            }
            restored.sort(null);
            Map<String, Object> e = event("open", id, i, getRuntimeContext().getTaskInfo().getAttemptNumber());
            e.put("restored", ctx.isRestored());
            e.put("operatorState", Map.of("rules", restored));
            Trace.event(e);
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) {
            Faults.snapshot(task, ctx.getCheckpointId());
        }

        @Override
        public void processElement(Rec r, ReadOnlyContext ctx, Collector<Rec> out) throws Exception {
            Faults.record(task);
            ReadOnlyBroadcastState<String, String> st = ctx.getBroadcastState(RULES);
            if (!st.contains(r.key)) {
                out.collect(r);
            }
        }

        @Override
        public void processBroadcastElement(Rec r, Context ctx, Collector<Rec> out) throws Exception {
            String t = r.text.trim();
            String verb = t;
            String word = "";
            int sp = t.indexOf(' ');
            if (sp >= 0) {
                verb = t.substring(0, sp);
                word = t.substring(sp + 1).trim().toLowerCase(Locale.ROOT);
            }
            if (word.isEmpty()) {
                word = r.key;
            }
            BroadcastState<String, String> st = ctx.getBroadcastState(RULES);
            switch (verb.toLowerCase(Locale.ROOT)) {
                case "block" -> st.put(word, "block");
                case "allow" -> st.remove(word);
                default -> {}
            }
        }
    }

    /**
     * sink, exactly-once: a two-phase-commit sink as Flink's TwoPhaseCommitSinkFunction works. Records go
     * into the current transaction of an external store (Trace's staging area, which survives task failures
     * as a Kafka transaction does); at a checkpoint's barrier the transaction is pre-committed and kept in
     * operator ListState "pending-transactions" and a new one begins; when the checkpoint completes, pending
     * transactions up to it are committed. On restore the pending transactions in the state are committed
     * (recoverAndCommit) and everything else of the failed attempt is aborted.
     */
    static final class TwoPhaseSink extends AbstractStreamOperator<Void> implements OneInputStreamOperator<Rec, Void> {
        private final String id;
        private final String outputFile;
        private transient ListState<String> state;
        private transient TreeMap<Long, String> pending;
        private transient String current;
        private transient String task;
        private transient int seq;

        TwoPhaseSink(String id) {
            this(id, null);
        }

        /** outputFile: where committed records are appended as JSON lines too (an exported job's output). */
        TwoPhaseSink(String id, String outputFile) {
            this.id = id;
            this.outputFile = outputFile;
        }

        @Override
        public void initializeState(StateInitializationContext ctx) throws Exception {
            super.initializeState(ctx);
            state = ctx.getOperatorStateStore().getListState(
                    new ListStateDescriptor<>("pending-transactions", Types.STRING));
            pending = new TreeMap<>();
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            int attempt = getRuntimeContext().getTaskInfo().getAttemptNumber();
            task = id + "#" + i;
            List<String> restored = new ArrayList<>();
            List<String> committedNow = new ArrayList<>();
            if (ctx.isRestored()) {
                for (String s : state.get()) {
                    restored.add(s);
                    String[] p = s.split("@", 2);
                    if (Staging.commit(id, p[0], Long.parseLong(p[1]), outputFile)) {
                        committedNow.add(p[0]);
                    }
                }
            }
            state.clear();
            Map<String, Object> e = event("open", id, i, attempt);
            e.put("restored", ctx.isRestored());
            e.put("operatorState", Map.of("pending-transactions", restored));
            e.put("committedOnRestore", committedNow);
            Trace.event(e);
            current = begin();
        }

        private String begin() {
            return task + "-a" + getRuntimeContext().getTaskInfo().getAttemptNumber() + "-" + Trace.phase + "-t" + (seq++);
        }

        @Override
        public void processElement(StreamRecord<Rec> el) {
            Faults.record(task);
            Staging.write(current, el.getValue());
        }

        @Override
        public void snapshotState(StateSnapshotContext ctx) throws Exception {
            Faults.snapshot(task, ctx.getCheckpointId());
            pending.put(ctx.getCheckpointId(), current);
            current = begin();
            List<String> l = new ArrayList<>();
            pending.forEach((cp, txn) -> l.add(txn + "@" + cp));
            state.update(l);
            super.snapshotState(ctx);
        }

        @Override
        public void notifyCheckpointComplete(long id) throws Exception {
            super.notifyCheckpointComplete(id);
            // Which checkpoint notified the subtask, and the transactions it committed (the checkpoint each was
            // pre-committed in, and its records): a savepoint that is not a stop-with-savepoint notifies nobody
            // (CheckpointCoordinator.cleanupAfterCompletedCheckpoint), so its transaction waits for the next
            // checkpoint.
            List<Map<String, Object>> committedNow = new ArrayList<>();
            var it = pending.headMap(id, true).entrySet().iterator();
            while (it.hasNext()) {
                var e = it.next();
                int n = Staging.size(e.getValue());
                if (Staging.commit(this.id, e.getValue(), e.getKey(), outputFile)) {
                    committedNow.add(Map.of("checkpoint", e.getKey(), "records", n));
                }
                it.remove();
            }
            Map<String, Object> ev = event("notified", this.id, getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
                    getRuntimeContext().getTaskInfo().getAttemptNumber());
            ev.put("checkpoint", id);
            ev.put("committed", committedNow);
            Trace.event(ev);
        }

        @Override
        public void notifyCheckpointAborted(long id) throws Exception {
            super.notifyCheckpointAborted(id);
            // As TwoPhaseCommitSinkFunction (which does not override it): an aborted checkpoint commits nothing and
            // aborts nothing; the transaction pre-committed in it stays pending, and the next checkpoint that
            // completes commits it with its own. Reported: the checkpoint, and the transactions still pending.
            Map<String, Object> ev = event("aborted", this.id, getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
                    getRuntimeContext().getTaskInfo().getAttemptNumber());
            ev.put("checkpoint", id);
            List<Map<String, Object>> still = new ArrayList<>();
            pending.forEach((cp, txn) -> still.add(Map.of("checkpoint", cp, "records", Staging.size(txn))));
            ev.put("pending", still);
            Trace.event(ev);
        }

        @Override
        public void close() throws Exception {
            if (current != null) {
                Staging.abort(current);
            }
            super.close();
        }
    }

    /** sink, at-least-once: writes each record as it arrives. */
    static final class AtLeastOnceSink extends AbstractStreamOperator<Void> implements OneInputStreamOperator<Rec, Void> {
        private final String id;
        private final String outputFile;
        private transient String task;

        AtLeastOnceSink(String id) {
            this(id, null);
        }

        AtLeastOnceSink(String id, String outputFile) {
            this.id = id;
            this.outputFile = outputFile;
        }

        @Override
        public void open() throws Exception {
            super.open();
            int i = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            task = id + "#" + i;
            Trace.event(event("open", id, i, getRuntimeContext().getTaskInfo().getAttemptNumber()));
        }

        @Override
        public void processElement(StreamRecord<Rec> el) {
            Faults.record(task);
            Trace.commit(id, null, 0, List.of(el.getValue()));
            Output.append(outputFile, List.of(el.getValue()));
        }
    }

    /** The external system a two-phase sink writes to: open transactions' records, committed at most once. */
    static final class Staging {
        private static final Map<String, List<Rec>> open = new LinkedHashMap<>();

        static synchronized void write(String txn, Rec r) {
            open.computeIfAbsent(txn, k -> new ArrayList<>()).add(r);
        }

        static boolean commit(String sink, String txn, long checkpoint, String outputFile) {
            List<Rec> recs;
            synchronized (Staging.class) {
                recs = open.remove(txn);
            }
            boolean now = Trace.commit(sink, txn, checkpoint, recs == null ? List.of() : recs);
            if (now && recs != null) {
                Output.append(outputFile, recs);
            }
            return now;
        }

        /** How many records txn holds (0 once committed or aborted). */
        static synchronized int size(String txn) {
            List<Rec> recs = open.get(txn);
            return recs == null ? 0 : recs.size();
        }

        static synchronized void abort(String txn) {
            open.remove(txn);
        }

        static synchronized void reset() {
            open.clear();
        }
    }

    /** A sink's committed records as JSON lines in a file (one file per sink, shared by its subtasks). */
    static final class Output {
        static synchronized void append(String file, List<Rec> recs) {
            if (file == null || recs.isEmpty()) {
                return;
            }
            StringBuilder b = new StringBuilder();
            for (Rec r : recs) {
                b.append("{\"key\":").append(quote(r.key)).append(",\"value\":").append(r.value);
                if (!r.text.isEmpty()) {
                    b.append(",\"text\":").append(quote(r.text));
                }
                b.append("}\n");
            }
            try {
                java.nio.file.Path p = java.nio.file.Path.of(file);
                if (p.getParent() != null) {
                    java.nio.file.Files.createDirectories(p.getParent());
                }
                java.nio.file.Files.writeString(p, b, java.nio.file.StandardOpenOption.CREATE,
                        java.nio.file.StandardOpenOption.APPEND);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException("append committed records to " + file, e);
            }
        }

        private static String quote(String s) {
            StringBuilder b = new StringBuilder("\"");
            for (char c : s.toCharArray()) {
                switch (c) {
                    case '"' -> b.append("\\\"");
                    case '\\' -> b.append("\\\\");
                    case '\n' -> b.append("\\n");
                    case '\r' -> b.append("\\r");
                    case '\t' -> b.append("\\t");
                    default -> {
                        if (c < 0x20) {
                            b.append(String.format("\\u%04x", (int) c));
                        } else {
                            b.append(c);
                        }
                    }
                }
            }
            return b.append('"').toString();
        }
    }

    static List<String> sorted(Iterable<String> it) {
        TreeSet<String> s = new TreeSet<>();
        it.forEach(s::add);
        return new ArrayList<>(s);
    }
}
