package org.statelab.flinkref;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Where a restore with local recovery read its state. Flink's trace does not say; its TaskLocalStateStoreImpl
 * logs at DEBUG, for each subtask a restore hands a checkpoint to, whether it holds a registered local copy of
 * it ("Found registered local state for checkpoint N in subtask (job - vertex - index)" or "Did not find ...";
 * TaskStateManagerImpl then restores the keyed state from that copy before the remote one). flinkref raises
 * just that logger to DEBUG, into an appender of its own (nothing more reaches stderr), and records each
 * lookup. The TaskManagers keep their local state under a directory flinkref chose
 * (taskmanager.state.local.root-dirs), deleted when flinkref exits.
 */
final class LocalState {
    private LocalState() {}

    static final String LOGGER = "org.apache.flink.runtime.state.TaskLocalStateStoreImpl";

    /**
     * BackendRestorerProcedure logs, for each state backend a restore creates, which of its prioritized
     * alternatives it restores from ("Creating keyed state backend for CLASS_OPERATORID_(i/n) and restoring with
     * state [...] from alternative (a/b)."; the state handles at TRACE only). The alternatives are
     * PrioritizedOperatorSubtaskState's: local copies (or a mix of local and remote handles) first, the job
     * manager's (remote) last; a local handle's files lie under the local state root.
     */
    static final String RESTORER = "org.apache.flink.streaming.api.operators.BackendRestorerProcedure";

    private static final Pattern RESTORE = Pattern.compile(
            "^Creating keyed state backend for \\S+?_([0-9a-f]{32})_\\((\\d+)/(\\d+)\\) and restoring with state (.*) "
                    + "from alternative \\((\\d+)/(\\d+)\\)\\.?$", Pattern.DOTALL);

    /** A keyed state handle's class in a handle's toString (KeyGroupsStateHandle, Incremental*KeyedStateHandle). */
    private static final Pattern HANDLE = Pattern.compile("\\b(KeyGroupsStateHandle|\\w+KeyedStateHandle)\\{");

    private static final List<Map<String, Object>> restores = new ArrayList<>();

    /** The job whose tasks restore now (a backend restore's log does not name its job). */
    static volatile String currentJob = "";

    private static final Pattern LOOKUP = Pattern.compile(
            "^(Found|Did not find) registered local state for checkpoint (\\d+) in subtask \\((\\S+) - (\\S+) - (\\d+)\\)");

    private static final List<Map<String, Object>> lookups = new ArrayList<>();
    private static boolean installed;
    private static File root;

    /** The TaskManagers' local state root (taskmanager.state.local.root-dirs), one per flinkref process. */
    static synchronized String root() {
        if (root == null) {
            root = new File(System.getProperty("java.io.tmpdir"), "flinkref-local-state-" + ProcessHandle.current().pid());
            root.mkdirs();
            File dir = root;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> org.apache.flink.util.FileUtils.deleteDirectoryQuietly(dir)));
        }
        return root.getAbsolutePath();
    }

    /** Raises TaskLocalStateStoreImpl's logger to DEBUG into flinkref's own appender (once). */
    static synchronized void install() {
        if (installed) {
            return;
        }
        installed = true;
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        Configuration conf = ctx.getConfiguration();
        AbstractAppender app = new AbstractAppender("flinkref-local-state", null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent e) {
                record(e.getMessage().getFormattedMessage());
            }
        };
        app.start();
        conf.addAppender(app);
        LoggerConfig lc = new LoggerConfig(LOGGER, Level.DEBUG, false);
        lc.addAppender(app, Level.DEBUG, null);
        conf.addLogger(LOGGER, lc);
        LoggerConfig rc = new LoggerConfig(RESTORER, Level.TRACE, false);
        rc.addAppender(app, Level.TRACE, null);
        conf.addLogger(RESTORER, rc);
        ctx.updateLoggers();
    }

    private static void record(String msg) {
        Matcher r = RESTORE.matcher(msg);
        if (r.find()) {
            String st = r.group(4);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("jobId", currentJob);
            e.put("operatorId", r.group(1));
            e.put("subtask", Integer.parseInt(r.group(2)) - 1);
            e.put("alternative", Integer.parseInt(r.group(5)));
            e.put("alternatives", Integer.parseInt(r.group(6)));
            e.put("local", root != null && st.contains(root.getAbsolutePath()));
            List<String> handles = new ArrayList<>();
            Matcher h = HANDLE.matcher(st);
            while (h.find()) {
                handles.add(h.group(1));
            }
            e.put("handles", handles);
            synchronized (restores) {
                restores.add(e);
            }
            return;
        }
        Matcher m = LOOKUP.matcher(msg);
        if (!m.find()) {
            return;
        }
        Map<String, Object> e = new LinkedHashMap<>();
        e.put("phase", Trace.phase);
        e.put("found", m.group(1).equals("Found"));
        e.put("checkpoint", Long.parseLong(m.group(2)));
        e.put("jobId", m.group(3));
        e.put("vertexId", m.group(4));
        e.put("subtask", Integer.parseInt(m.group(5)));
        synchronized (lookups) {
            lookups.add(e);
        }
    }

    private static final Pattern CHK = Pattern.compile("jid_([0-9a-f]+)[/\\\\]vtx_([0-9a-f]+)_sti_(\\d+)[/\\\\]chk_(\\d+)$");

    /**
     * The checkpoints whose local copy each subtask ("name#index") of job jobId holds now: the chk_N directories
     * under vtx_(vertex)_sti_(index) in the local state root (TaskLocalStateStoreImpl's layout), sorted.
     */
    static Map<String, List<Long>> list(String jobId, Map<String, String> vertexNames) {
        Map<String, List<Long>> out = new java.util.TreeMap<>();
        if (root == null) {
            return out;
        }
        try (java.util.stream.Stream<java.nio.file.Path> w = java.nio.file.Files.walk(root.toPath())) {
            w.filter(java.nio.file.Files::isDirectory).forEach(d -> {
                Matcher m = CHK.matcher(d.toString());
                if (m.find() && m.group(1).equals(jobId)) {
                    String task = vertexNames.getOrDefault(m.group(2), m.group(2)) + "#" + m.group(3);
                    out.computeIfAbsent(task, k -> new ArrayList<>()).add(Long.parseLong(m.group(4)));
                }
            });
        } catch (java.io.IOException | java.io.UncheckedIOException e) {
            // a directory deleted while walking: the next listing sees it gone
        }
        out.values().forEach(java.util.Collections::sort);
        return out;
    }

    /**
     * The listing once it settled: unchanged for 300 ms (the TaskManagers prune their local copies when the
     * checkpoint's completion reaches them, after the coordinator completed it), at most 5 s.
     */
    static Map<String, List<Long>> settledList(String jobId, Map<String, String> vertexNames)
            throws InterruptedException {
        long until = System.nanoTime() + 5_000_000_000L;
        Map<String, List<Long>> last = list(jobId, vertexNames);
        long since = System.nanoTime();
        while (System.nanoTime() < until && System.nanoTime() - since < 300_000_000L) {
            Thread.sleep(20);
            Map<String, List<Long>> now = list(jobId, vertexNames);
            if (!now.equals(last)) {
                last = now;
                since = System.nanoTime();
            }
        }
        return last;
    }

    /**
     * The lookups of job jobId, in the order Flink made them, each with its task ("name#index") from the job
     * graph's vertex names (vertex ID to name).
     */
    static List<Map<String, Object>> lookups(String jobId, Map<String, String> vertexNames) {
        List<Map<String, Object>> out = new ArrayList<>();
        synchronized (lookups) {
            for (Map<String, Object> e : lookups) {
                if (!jobId.equals(e.get("jobId"))) {
                    continue;
                }
                Map<String, Object> o = new LinkedHashMap<>();
                String name = vertexNames.getOrDefault((String) e.get("vertexId"), (String) e.get("vertexId"));
                o.put("task", name + "#" + e.get("subtask"));
                o.put("checkpoint", e.get("checkpoint"));
                o.put("found", e.get("found"));
                out.add(o);
            }
        }
        return out;
    }

    /**
     * The keyed state backends job jobId's restores created, in Flink's order: the task ("name#index", by
     * operator ID: chaining is off, so a vertex's ID is its operator's), the alternative restored from and how
     * many there were, whether its handles lie under the local state root, and the handles' classes.
     */
    static List<Map<String, Object>> restores(String jobId, Map<String, String> vertexNames) {
        List<Map<String, Object>> out = new ArrayList<>();
        synchronized (restores) {
            for (Map<String, Object> e : restores) {
                if (!jobId.equals(e.get("jobId"))) {
                    continue;
                }
                Map<String, Object> o = new LinkedHashMap<>(e);
                o.remove("jobId");
                String op = (String) o.remove("operatorId");
                o.put("task", vertexNames.getOrDefault(op, op) + "#" + e.get("subtask"));
                o.remove("subtask");
                out.add(o);
            }
        }
        return out;
    }
}
