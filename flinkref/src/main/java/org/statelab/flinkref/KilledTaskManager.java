package org.statelab.flinkref;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.plugin.PluginManager;
import org.apache.flink.core.plugin.PluginUtils;
import org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.taskexecutor.TaskManagerRunner;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.SerializationFeature;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * A TaskManager killed with SIGKILL, noticed only the way a real cluster notices it: a standalone session
 * cluster (a {@link StandaloneSessionClusterEntrypoint}: JobManager and standalone resource manager, RPC and
 * REST on 127.0.0.1) in this JVM, one TaskManager ({@link TaskManagerRunner}) in this JVM and one in a JVM of
 * its own, which the runner kills once the job runs and a checkpoint completed. Unlike
 * {@code MiniCluster.terminateTaskManager} (the TaskExecutor closes and tells the JobManager at once), nothing
 * tells the JobManager: it finds out by its heartbeat with the TaskManager (a timeout, or failed heartbeat
 * RPCs) or by a task's network connection to the dead process. A spare TaskManager (this JVM) joins before
 * the kill, so the restarted tasks have a slot.
 *
 * <pre>
 *   java -cp ... org.statelab.flinkref.KilledTaskManager OUTDIR SCENARIO.json...   (writes OUTDIR/NAME.json;
 *                                                                              its files in OUTDIR/work-NAME)
 *   SCENARIO: {"name", "job": spec, "input": file, "limits": {source: [n, ...]},
 *              "heartbeat": {"timeout": ms, "interval": ms, "rpcFailureThreshold": n}, "flinkConfig": {...}}
 * </pre>
 *
 * The sources hold at "limits" (so the job is still running when the TaskManager dies); once the job runs again
 * after the loss every source is released (the tasks now all run in this JVM) and the job finishes. The killed
 * JVM prints each record its sinks commit on stdout, so the committed output is whole.
 */
public final class KilledTaskManager {
    private KilledTaskManager() {}

    private static final ObjectMapper OM = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("taskmanager")) {
            child(OM.readTree(new File(args[1])));
            return;
        }
        if (args.length < 2) {
            System.err.println("usage: KilledTaskManager OUTDIR SCENARIO.json...");
            System.exit(2);
        }
        File outDir = new File(args[0]);
        outDir.mkdirs();
        int rc = 0;
        for (int i = 1; i < args.length; i++) {
            JsonNode sc = OM.readTree(new File(args[i]));
            Map<String, Object> trace;
            List<AutoCloseable> cluster = new ArrayList<>();
            try {
                trace = run(sc, new File(outDir, "work-" + sc.path("name").asText()), cluster);
            } catch (Exception e) {
                e.printStackTrace();
                trace = new LinkedHashMap<>();
                trace.put("name", sc.path("name").asText());
                trace.put("error", e.toString());
                rc = 1;
            }
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
                    .writeValue(new File(outDir, sc.path("name").asText() + ".json"), trace);
            System.out.println("flinkref: " + sc.path("name").asText() + " " + (trace.containsKey("error") ? "error" : "done")
                    + " in " + trace.getOrDefault("millis", "?") + " ms");
            // Closed once the trace is written: a cluster's RPC system may stop this JVM as it shuts down (a
            // class of its closed class loader loaded late: FatalExitExceptionHandler), so the harness runs one
            // scenario per JVM.
            for (AutoCloseable c : cluster) {
                try {
                    c.close();
                } catch (Exception e) {
                    // closing anyway
                }
            }
        }
        System.exit(rc);
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }

    /** The cluster's configuration: every process reads the same. */
    static Map<String, String> clusterConf(JsonNode sc, int rpcPort, int restPort) {
        Map<String, String> m = new TreeMap<>();
        m.put("jobmanager.rpc.address", "127.0.0.1");
        m.put("jobmanager.rpc.port", String.valueOf(rpcPort));
        m.put("jobmanager.bind-host", "127.0.0.1");
        m.put("rest.address", "127.0.0.1");
        m.put("rest.bind-address", "127.0.0.1");
        m.put("rest.port", String.valueOf(restPort));
        m.put("taskmanager.host", "127.0.0.1");
        m.put("taskmanager.bind-host", "127.0.0.1");
        m.put("taskmanager.numberOfTaskSlots", "1");
        // The REST API caches a job's execution graph for web.refresh-interval (3 s): poll what is current.
        m.put("web.refresh-interval", "10");
        m.put("taskmanager.memory.network.min", "32m");
        m.put("taskmanager.memory.network.max", "32m");
        m.put("taskmanager.memory.managed.size", "32m");
        JsonNode hb = sc.path("heartbeat");
        if (hb.has("timeout")) {
            m.put("heartbeat.timeout", hb.path("timeout").asLong() + " ms");
        }
        if (hb.has("interval")) {
            m.put("heartbeat.interval", hb.path("interval").asLong() + " ms");
        }
        if (hb.has("rpcFailureThreshold")) {
            m.put("heartbeat.rpc-failure-threshold", hb.path("rpcFailureThreshold").asText());
        }
        m.putAll(Runner.clusterConfig(sc.path("job")));
        sc.path("flinkConfig").fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
        return m;
    }

    static Configuration configuration(Map<String, String> m, String resourceId) {
        Map<String, String> c = new HashMap<>(m);
        if (resourceId != null) {
            c.put("taskmanager.resource-id", resourceId);
            // No start-up script computed the TaskManager's memory and CPU: the local defaults, as a MiniCluster's.
            return org.apache.flink.runtime.taskexecutor.TaskExecutorResourceUtils.adjustForLocalExecution(Configuration.fromMap(c));
        }
        return Configuration.fromMap(c);
    }

    static void holdSources(JsonNode sc) {
        sc.path("limits").fields().forEachRemaining(e -> {
            long[] l = new long[e.getValue().size()];
            for (int i = 0; i < l.length; i++) {
                l[i] = e.getValue().get(i).asLong();
            }
            PartitionSource.limits.put(e.getKey(), l);
        });
    }

    /** The TaskManager in a JVM of its own: holds its sources as told, prints what its sinks commit. */
    private static void child(JsonNode c) throws Exception {
        holdSources(c.path("scenario"));
        Map<String, String> m = new HashMap<>();
        c.path("conf").fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
        Configuration conf = configuration(m, c.path("resourceId").asText());
        Thread printer = new Thread(() -> {
            Map<String, Integer> seen = new HashMap<>();
            while (true) {
                Trace.committed().forEach((sink, recs) -> {
                    int from = seen.getOrDefault(sink, 0);
                    for (int i = from; i < recs.size(); i++) {
                        try {
                            System.out.println("COMMIT " + OM.writeValueAsString(Map.of("sink", sink, "rec", recs.get(i))));
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    }
                    seen.put(sink, recs.size());
                });
                System.out.flush();
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "commit-printer");
        printer.setDaemon(true);
        printer.start();
        // The runner holds this JVM's stdin: when it goes (ended, or killed by a test's timeout), so does this
        // TaskManager, never left running on its own.
        Thread orphan = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // nothing is sent
                }
            } catch (Exception e) {
                // closed
            }
            Runtime.getRuntime().halt(0);
        }, "parent-watch");
        orphan.setDaemon(true);
        orphan.start();
        PluginManager pm = PluginUtils.createPluginManagerFromRootFolder(conf);
        TaskManagerRunner tm = new TaskManagerRunner(conf, pm, TaskManagerRunner::createTaskExecutorService);
        tm.start();
        System.out.println("STARTED");
        System.out.flush();
        tm.getTerminationFuture().get();
        System.exit(0);
    }

    private static JsonNode get(String base, String path) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(5)).build(),
                HttpResponse.BodyHandlers.ofString());
        return OM.readTree(r.body());
    }

    private static long sinceKill(long kill) {
        return kill == 0 ? -1 : System.currentTimeMillis() - kill;
    }

    /** Runs sc; the cluster's processes are added to cluster for the caller to close once the trace is written. */
    static Map<String, Object> run(JsonNode sc, File work, List<AutoCloseable> cluster) throws Exception {
        long start = System.currentTimeMillis();
        Trace.reset();
        holdSources(sc);
        int rpcPort = freePort();
        int restPort = freePort();
        Map<String, String> m = clusterConf(sc, rpcPort, restPort);
        work.mkdirs(); // checkpoints and the child's files, under OUTDIR (the harness removes it)
        StandaloneSessionClusterEntrypoint jm = new StandaloneSessionClusterEntrypoint(configuration(m, null));
        jm.startCluster();
        String rest = "http://127.0.0.1:" + jm.getRestPort();
        List<TaskManagerRunner> local = new ArrayList<>();
        Process child = null;
        List<String> childCommits = new ArrayList<>();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("name", sc.path("name").asText());
        out.put("flinkVersion", EnvironmentInformation.getVersion());
        try {
            PluginManager pm = PluginUtils.createPluginManagerFromRootFolder(configuration(m, null));
            TaskManagerRunner a = new TaskManagerRunner(configuration(m, "tm-a"), pm, TaskManagerRunner::createTaskExecutorService);
            a.start();
            local.add(a);
            // The TaskManager to kill, in a JVM of its own.
            Map<String, Object> cc = new LinkedHashMap<>();
            cc.put("conf", m);
            cc.put("resourceId", "tm-killed");
            cc.put("scenario", sc);
            File ccFile = new File(work, "child.json");
            OM.writeValue(ccFile, cc);
            String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
            ProcessBuilder pb = new ProcessBuilder(java, "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                    "-cp", System.getProperty("java.class.path"), KilledTaskManager.class.getName(), "taskmanager",
                    ccFile.getPath());
            pb.redirectError(new File(work, "taskmanager.err"));
            child = pb.start();
            BufferedReader childOut = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
            Thread reader = new Thread(() -> {
                try {
                    String line;
                    while ((line = childOut.readLine()) != null) {
                        synchronized (childCommits) {
                            if (line.startsWith("COMMIT ")) {
                                childCommits.add(line.substring(7));
                            }
                        }
                    }
                } catch (Exception e) {
                    // the process died
                }
            }, "child-reader");
            reader.setDaemon(true);
            reader.start();
            awaitTaskManagers(rest, 2, 60_000);

            // Submit over REST.
            StreamExecutionEnvironment env =
                    new StreamExecutionEnvironment(Runner.jobConfig(sc.path("job"), sc.path("jobConfig"), work));
            JobBuilder.build(env, sc.path("job"), sc.path("input").asText(), new HashMap<>());
            StreamGraph sg = env.getStreamGraph();
            sg.setJobName(sc.path("job").path("name").asText("job"));
            JobGraph jg = sg.getJobGraph();
            JobID id;
            try (RestClusterClient<StandaloneClusterId> client =
                         new RestClusterClient<>(configuration(m, null), StandaloneClusterId.getInstance())) {
                id = client.submitJob(jg).get(60, TimeUnit.SECONDS);
            }
            String job = rest + "/jobs/" + id.toHexString();
            // Every subtask RUNNING, then a spare TaskManager for the restarted tasks.
            Map<String, Subtask> subtasks = awaitAllRunning(job, 60_000);
            TaskManagerRunner spare = new TaskManagerRunner(configuration(m, "tm-spare"), pm, TaskManagerRunner::createTaskExecutorService);
            spare.start();
            local.add(spare);
            awaitTaskManagers(rest, 3, 60_000);
            // A checkpoint completed after the sources reached their limits (they hold there), and the killed
            // JVM's commits printed.
            long cps = sc.path("checkpointsBeforeKill").asLong(2);
            awaitCheckpoints(job, cps, 60_000);
            Thread.sleep(300);
            subtasks = subtasks(job);
            List<String> lost = new ArrayList<>();
            subtasks.forEach((k, s) -> {
                if (s.tm.contains("tm-killed")) {
                    lost.add(k);
                }
            });
            out.put("lostSubtasks", new ArrayList<>(new TreeSet<>(lost)));
            out.put("completedBeforeKill", get(job, "/checkpoints").path("counts").path("completed").asLong());

            long kill = System.currentTimeMillis();
            child.destroyForcibly(); // SIGKILL on Linux
            child.waitFor(10, TimeUnit.SECONDS);
            long dead = System.currentTimeMillis();
            out.put("killMillis", dead - kill);

            // Poll what the JobManager says, every few ms, until the job runs again everywhere.
            List<Map<String, Object>> timeline = new ArrayList<>();
            String lastStatus = "RUNNING";
            Map<String, String> lastState = new HashMap<>();
            subtasks.forEach((k, s) -> lastState.put(k, s.state));
            long deadline = kill + sc.path("waitMillis").asLong(120_000);
            while (System.currentTimeMillis() < deadline) {
                String st = get(job, "").path("state").asText();
                long t = sinceKill(kill);
                if (!st.equals(lastStatus)) {
                    timeline.add(Map.of("millis", t, "job", st));
                    lastStatus = st;
                }
                Map<String, Subtask> now = subtasks(job);
                boolean allRunning = true;
                boolean again = false;
                for (Map.Entry<String, Subtask> e : now.entrySet()) {
                    String k = e.getKey();
                    String s = e.getValue().state;
                    if (!s.equals(lastState.get(k))) {
                        timeline.add(Map.of("millis", t, "task", k, "state", s, "attempt", e.getValue().attempt));
                        lastState.put(k, s);
                    }
                    allRunning &= s.equals("RUNNING");
                    again |= e.getValue().attempt > 0;
                }
                if (again && st.equals("RUNNING") && allRunning) {
                    subtasks = now;
                    break;
                }
                if (st.equals("FAILED") || st.equals("CANCELED")) {
                    break;
                }
                Thread.sleep(5);
            }
            out.put("timeline", timeline);
            List<String> restartedTasks = new ArrayList<>();
            subtasks.forEach((k, s) -> {
                if (s.attempt > 0) {
                    restartedTasks.add(k);
                }
            });
            out.put("restartedSubtasks", new ArrayList<>(new TreeSet<>(restartedTasks)));
            Map<String, String> placement = new TreeMap<>();
            subtasks.forEach((k, s) -> placement.put(k, s.tm));
            out.put("taskManagersAfter", placement);

            // Why and when the JobManager failed the tasks: its exception history.
            JsonNode ex = get(job, "/exceptions");
            List<Map<String, Object>> failures = new ArrayList<>();
            for (JsonNode e : ex.path("exceptionHistory").path("entries")) {
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("afterKillMillis", e.path("timestamp").asLong() - kill);
                f.put("exception", e.path("exceptionName").asText());
                String trace = e.path("stacktrace").asText();
                f.put("message", trace.lines().findFirst().orElse(""));
                List<String> causes = new ArrayList<>();
                trace.lines().filter(l -> l.startsWith("Caused by:")).forEach(causes::add);
                f.put("causes", causes);
                f.put("task", e.path("taskName").asText());
                f.put("taskManager", e.path("taskManagerId").asText(e.path("location").asText()));
                List<String> concurrent = new ArrayList<>();
                for (JsonNode cx : e.path("concurrentExceptions")) {
                    concurrent.add(cx.path("taskName").asText() + ": " + cx.path("stacktrace").asText().lines().findFirst().orElse(""));
                }
                f.put("concurrent", concurrent);
                failures.add(f);
            }
            out.put("failures", failures);

            // Release the sources (every task runs in this JVM now) and let the job finish.
            PartitionSource.limits.clear();
            long end = System.currentTimeMillis() + 120_000;
            String st = "";
            while (System.currentTimeMillis() < end) {
                st = get(job, "").path("state").asText();
                if (st.equals("FINISHED") || st.equals("FAILED") || st.equals("CANCELED")) {
                    break;
                }
                Thread.sleep(20);
            }
            out.put("finalStatus", st);
            Map<String, List<Object>> committed = new LinkedHashMap<>();
            synchronized (childCommits) {
                for (String l : childCommits) {
                    JsonNode n = OM.readTree(l);
                    committed.computeIfAbsent(n.path("sink").asText(), k -> new ArrayList<>()).add(OM.convertValue(n.path("rec"), Map.class));
                }
            }
            Trace.committed().forEach((k, v) -> committed.computeIfAbsent(k, x -> new ArrayList<>()).addAll(v));
            out.put("committed", committed);
            out.put("heartbeat", Map.of("timeout", m.getOrDefault("heartbeat.timeout", "default"),
                    "interval", m.getOrDefault("heartbeat.interval", "default"),
                    "rpcFailureThreshold", m.getOrDefault("heartbeat.rpc-failure-threshold", "default")));
        } finally {
            if (child != null && child.isAlive()) {
                child.destroyForcibly();
            }
            for (TaskManagerRunner t : local) {
                cluster.add(() -> t.closeAsync().get(30, TimeUnit.SECONDS));
            }
            cluster.add(() -> jm.closeAsync().get(60, TimeUnit.SECONDS));
        }
        out.put("millis", System.currentTimeMillis() - start);
        return out;
    }

    private static void awaitTaskManagers(String rest, int n, long ms) throws Exception {
        long deadline = System.currentTimeMillis() + ms;
        while (get(rest, "/taskmanagers").path("taskmanagers").size() < n) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(n + " TaskManagers did not register in " + ms + " ms");
            }
            Thread.sleep(20);
        }
    }

    private static void awaitCheckpoints(String job, long n, long ms) throws Exception {
        long deadline = System.currentTimeMillis() + ms;
        while (get(job, "/checkpoints").path("counts").path("completed").asLong() < n) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException(n + " checkpoints did not complete in " + ms + " ms");
            }
            Thread.sleep(10);
        }
    }

    private record Subtask(String state, int attempt, String tm) {}

    /** Each subtask ("operator#i", by the vertex's name) with its state, attempt and TaskManager. */
    private static Map<String, Subtask> subtasks(String job) throws Exception {
        Map<String, Subtask> out = new TreeMap<>();
        for (JsonNode v : get(job, "").path("vertices")) {
            String name = v.path("name").asText();
            if (name.startsWith("Source: ")) {
                name = name.substring("Source: ".length());
            }
            JsonNode d = get(job, "/vertices/" + v.path("id").asText());
            for (JsonNode s : d.path("subtasks")) {
                String tm = s.path("taskmanager-id").asText("");
                out.put(name + "#" + s.path("subtask").asInt(),
                        new Subtask(s.path("status").asText(), s.path("attempt").asInt(), tm));
            }
        }
        return out;
    }

    private static Map<String, Subtask> awaitAllRunning(String job, long ms) throws Exception {
        long deadline = System.currentTimeMillis() + ms;
        while (true) {
            Map<String, Subtask> s = subtasks(job);
            if (!s.isEmpty() && s.values().stream().allMatch(x -> x.state.equals("RUNNING"))) {
                return s;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the job's subtasks did not all run in " + ms + " ms: " + s);
            }
            Thread.sleep(10);
        }
    }
}
