package org.statelab.flinkref;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the operators saw from inside Flink, collected in this JVM. A MiniCluster runs its TaskManagers in
 * the harness's own JVM, so operators report here directly and the runner writes it out with what the
 * JobManager reports (execution graph, checkpoint statistics, exception history).
 *
 * <p>Every method is thread-safe: subtasks of every TaskManager call it concurrently.
 */
public final class Trace {
    private Trace() {}

    /** Events of operators (open with restored state, close with final state), in arrival order. */
    private static final List<Map<String, Object>> events = new ArrayList<>();

    /** Committed sink output per sink operator, in commit order. */
    private static final Map<String, List<Map<String, Object>>> committed = new LinkedHashMap<>();

    /** Transactions already committed (a committer may be asked again after a restore; commit is idempotent). */
    private static final Map<String, Boolean> committedTxns = new ConcurrentHashMap<>();

    /** Records processed per "operator#subtask" in the current phase (for the runner's fault triggers). */
    private static final Map<String, AtomicLong> processed = new ConcurrentHashMap<>();

    /** The phase the runner is in; operators tag their events with it. */
    static volatile int phase;

    static synchronized void reset() {
        events.clear();
        committed.clear();
        committedTxns.clear();
        processed.clear();
        phase = 0;
    }

    static synchronized void event(Map<String, Object> e) {
        e.put("phase", phase);
        events.add(e);
    }

    /** How many times task opened before in the current phase. */
    static synchronized int opens(String task) {
        int n = 0;
        for (Map<String, Object> e : events) {
            if (((Integer) e.get("phase")) == phase && task.equals(e.get("task")) && "open".equals(e.get("event"))) {
                n++;
            }
        }
        return n;
    }

    static synchronized List<Map<String, Object>> events(int phase) {
        List<Map<String, Object>> out = new ArrayList<>();
        for (Map<String, Object> e : events) {
            if (((Integer) e.get("phase")) == phase) {
                out.add(e);
            }
        }
        return out;
    }

    /** Commits txn's records to sink unless txn was committed already; returns whether it committed now. */
    static synchronized boolean commit(String sink, String txn, long checkpoint, List<Rec> recs) {
        if (txn != null && committedTxns.putIfAbsent(txn, Boolean.TRUE) != null) {
            return false;
        }
        List<Map<String, Object>> out = committed.computeIfAbsent(sink, k -> new ArrayList<>());
        for (Rec r : recs) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("key", r.key);
            m.put("value", r.value);
            if (!r.text.isEmpty()) {
                m.put("text", r.text);
            }
            if (txn != null) {
                m.put("txn", txn);
                m.put("checkpoint", checkpoint);
            }
            m.put("phase", phase);
            out.add(m);
        }
        return true;
    }

    static synchronized Map<String, List<Map<String, Object>>> committed() {
        Map<String, List<Map<String, Object>>> c = new LinkedHashMap<>();
        committed.forEach((k, v) -> c.put(k, new ArrayList<>(v)));
        return c;
    }

    /** Counts one processed record of task and returns how many it has processed in this phase. */
    static long processed(String task) {
        return processed.computeIfAbsent(task, k -> new AtomicLong()).incrementAndGet();
    }

    static long processedSoFar(String task) {
        AtomicLong n = processed.get(task);
        return n == null ? 0 : n.get();
    }

    /** The records every subtask of operator op has processed in this phase, together. */
    static long processedByOperator(String op) {
        long n = 0;
        for (Map.Entry<String, AtomicLong> e : processed.entrySet()) {
            if (e.getKey().startsWith(op + "#")) {
                n += e.getValue().get();
            }
        }
        return n;
    }

    static void resetProcessed() {
        processed.clear();
    }
}
