package org.statelab.flinkref;

import java.io.File;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.JobManagerOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.FailedCheckpointStats;
import org.apache.flink.runtime.checkpoint.RestoredCheckpointStats;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.SavepointRestoreSettings;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.scheduler.ExecutionGraphInfo;
import org.apache.flink.runtime.scheduler.exceptionhistory.ExceptionHistoryEntry;
import org.apache.flink.runtime.scheduler.exceptionhistory.RootExceptionHistoryEntry;
import org.apache.flink.runtime.taskmanager.TaskManagerLocation;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * Runs one scenario: a StateLab job spec on a fresh MiniCluster, phase by phase (a phase is one Flink job
 * execution; the next phase restores from the savepoint the previous one stopped with), with the phase's
 * faults, and returns the trace.
 */
final class Runner {
    private final JsonNode sc;
    private final File work;
    private MiniCluster mc;

    private final Pool pool;

    Runner(JsonNode scenario, File work, Pool pool) {
        this.sc = scenario;
        this.work = work;
        this.pool = pool;
    }

    /**
     * The MiniCluster scenarios run on: one is kept while consecutive scenarios ask for the same number of
     * TaskManagers and slots, so a batch pays for a cluster's start once.
     */
    static final class Pool implements AutoCloseable {
        private MiniCluster mc;
        private String shape;

        static final String NETWORK = "flinkref.network";

        MiniCluster get(int tms, int slots) throws Exception {
            return get(tms, slots, Map.of());
        }

        /** clusterConf: options the JobManager reads from the cluster's configuration, not from a job's. */
        MiniCluster get(int tms, int slots, Map<String, String> clusterConf) throws Exception {
            String want = tms + "x" + slots + new java.util.TreeMap<>(clusterConf);
            if (mc != null && want.equals(shape)) {
                return mc;
            }
            close();
            Configuration conf = new Configuration();
            conf.set(RestOptions.BIND_PORT, "0");
            conf.set(RestOptions.ADDRESS, "127.0.0.1");
            conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
            // Every checkpoint in the trace's history (Flink keeps the latest 10 by default), so a scenario sees
            // which one failed and why even after many completed.
            conf.set(org.apache.flink.configuration.WebOptions.CHECKPOINTS_HISTORY_SIZE, 1000);
            // flinkref.network (not a Flink option): the TaskManagers talk over the network even when the cluster
            // starts with one, for a scenario that starts another (MiniCluster.useLocalCommunication uses local
            // channels only for a single TaskManager, and one started later could not exchange data with it).
            boolean network = "true".equals(clusterConf.get(NETWORK));
            clusterConf.forEach((k, v) -> {
                if (!k.equals(NETWORK)) {
                    conf.setString(k, v);
                }
            });
            MiniClusterConfiguration mcc = new MiniClusterConfiguration.Builder().setConfiguration(conf)
                    .setNumTaskManagers(tms).setNumSlotsPerTaskManager(slots).build();
            mc = network ? new MiniCluster(mcc) {
                @Override
                protected boolean useLocalCommunication() {
                    return false;
                }
            } : new MiniCluster(mcc);
            mc.start();
            shape = want;
            return mc;
        }

        @Override
        public void close() throws Exception {
            if (mc != null) {
                mc.closeAsync().get(60, TimeUnit.SECONDS);
                mc = null;
            }
        }
    }

    /** Flink's configuration for the job, from the StateLab spec. Only what the spec sets is set. */
    static Configuration jobConfig(JsonNode spec, JsonNode extra, File checkpointDir) {
        Map<String, String> m = new HashMap<>();
        JsonNode cp = spec.path("checkpointing");
        long interval = Specs.millis(cp.path("interval"), 0);
        if (interval > 0) {
            m.put(CheckpointingOptions.CHECKPOINTING_INTERVAL.key(), interval + " ms");
        }
        String mode = cp.path("mode").asText("");
        if (!mode.isEmpty()) {
            m.put(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE.key(),
                    mode.equals("at-least-once") ? "AT_LEAST_ONCE" : "EXACTLY_ONCE");
        }
        long timeout = Specs.millis(cp.path("timeout"), 0);
        if (timeout > 0) {
            m.put(CheckpointingOptions.CHECKPOINTING_TIMEOUT.key(), timeout + " ms");
        }
        if (cp.path("unaligned").asBoolean(false)) {
            m.put(CheckpointingOptions.ENABLE_UNALIGNED.key(), "true");
            long at = Specs.millis(cp.path("alignedCheckpointTimeout"), 0);
            putIf(m, at > 0, CheckpointingOptions.ALIGNED_CHECKPOINT_TIMEOUT.key(), at + " ms");
        }
        long pause = Specs.millis(cp.path("minPause"), 0);
        if (pause > 0) {
            m.put(CheckpointingOptions.MIN_PAUSE_BETWEEN_CHECKPOINTS.key(), pause + " ms");
        }
        int concurrent = cp.path("maxConcurrent").asInt(0);
        if (concurrent > 0) {
            m.put(CheckpointingOptions.MAX_CONCURRENT_CHECKPOINTS.key(), String.valueOf(concurrent));
        }
        // Retained checkpoints: read from the JobManager's configuration only (see clusterConfig), so on a
        // running cluster this has no effect; an exported job run locally (ExportedJob) starts its MiniCluster
        // with this configuration, where it does.
        m.putAll(clusterConfig(spec));
        if (cp.has("tolerableFailedCheckpoints")) {
            m.put(CheckpointingOptions.TOLERABLE_FAILURE_NUMBER.key(), cp.path("tolerableFailedCheckpoints").asText());
        }
        switch (spec.path("backend").asText("memory")) {
            case "pebble" -> {
                m.put(StateBackendOptions.STATE_BACKEND.key(), "rocksdb");
                m.put(CheckpointingOptions.CHECKPOINT_STORAGE.key(), "filesystem");
                m.put(CheckpointingOptions.INCREMENTAL_CHECKPOINTS.key(), String.valueOf(cp.path("incremental").asBoolean()));
            }
            case "fs" -> {
                m.put(StateBackendOptions.STATE_BACKEND.key(), "hashmap");
                m.put(CheckpointingOptions.CHECKPOINT_STORAGE.key(), "filesystem");
            }
            default -> {
                m.put(StateBackendOptions.STATE_BACKEND.key(), "hashmap");
                m.put(CheckpointingOptions.CHECKPOINT_STORAGE.key(), "jobmanager");
                int cap = cp.path("maxStateBytes").asInt(0);
                if (cap > 0) {
                    // JobManagerCheckpointStorage with StateLab's cap (the constructor is the only way to set it)
                    m.put(CheckpointingOptions.CHECKPOINT_STORAGE.key(), CappedJobManagerStorage.class.getName());
                    m.put(CappedJobManagerStorage.MAX_STATE_SIZE.key(), String.valueOf(cap));
                }
            }
        }
        m.put(CheckpointingOptions.CHECKPOINTS_DIRECTORY.key(), checkpointDir.toURI().toString());
        if (cp.has("tolerableFailed")) {
            m.put(CheckpointingOptions.TOLERABLE_FAILURE_NUMBER.key(), cp.path("tolerableFailed").asText());
        }
        String failover = spec.path("cluster").path("failover").asText("");
        if (!failover.isEmpty()) {
            m.put(JobManagerOptions.EXECUTION_FAILOVER_STRATEGY.key(), failover);
        }
        // The restart strategy: only what the spec sets, so an empty strategy leaves Flink's own default
        // (RestartBackoffTimeStrategyFactoryLoader: none without checkpointing, exponential-delay with it).
        JsonNode r = spec.path("restart");
        String strategy = r.path("strategy").asText("");
        long delay = Specs.millis(r.path("delay"), 0);
        int attempts = r.path("attempts").asInt(0);
        if (!strategy.isEmpty()) {
            m.put(RestartStrategyOptions.RESTART_STRATEGY.key(), strategy);
        }
        switch (strategy) {
            case "fixed-delay" -> {
                putIf(m, attempts > 0, RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS.key(), attempts);
                putIf(m, delay > 0, RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY.key(), delay + " ms");
            }
            case "failure-rate" -> {
                putIf(m, attempts > 0,
                        RestartStrategyOptions.RESTART_STRATEGY_FAILURE_RATE_MAX_FAILURES_PER_INTERVAL.key(), attempts);
                putIf(m, delay > 0, RestartStrategyOptions.RESTART_STRATEGY_FAILURE_RATE_DELAY.key(), delay + " ms");
                long iv = Specs.millis(r.path("interval"), 0);
                putIf(m, iv > 0, RestartStrategyOptions.RESTART_STRATEGY_FAILURE_RATE_FAILURE_RATE_INTERVAL.key(), iv + " ms");
            }
            case "exponential-delay" -> {
                putIf(m, attempts > 0, RestartStrategyOptions.RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS.key(), attempts);
                putIf(m, delay > 0,
                        RestartStrategyOptions.RESTART_STRATEGY_EXPONENTIAL_DELAY_INITIAL_BACKOFF.key(), delay + " ms");
                long mb = Specs.millis(r.path("maxBackoff"), 0);
                putIf(m, mb > 0, RestartStrategyOptions.RESTART_STRATEGY_EXPONENTIAL_DELAY_MAX_BACKOFF.key(), mb + " ms");
                double mul = r.path("multiplier").asDouble(0);
                putIf(m, mul > 0, RestartStrategyOptions.RESTART_STRATEGY_EXPONENTIAL_DELAY_BACKOFF_MULTIPLIER.key(), mul);
                double jit = r.path("jitter").asDouble(0);
                putIf(m, jit != 0, RestartStrategyOptions.RESTART_STRATEGY_EXPONENTIAL_DELAY_JITTER_FACTOR.key(),
                        Math.max(0, jit));
                long rt = Specs.millis(r.path("resetThreshold"), 0);
                putIf(m, rt > 0,
                        RestartStrategyOptions.RESTART_STRATEGY_EXPONENTIAL_DELAY_RESET_BACKOFF_THRESHOLD.key(), rt + " ms");
            }
            default -> {}
        }
        if (extra != null) {
            extra.fields().forEachRemaining(e -> m.put(e.getKey(), e.getValue().asText()));
        }
        return Configuration.fromMap(m);
    }

    /**
     * The options of the spec that Flink reads from the JobManager's (cluster's) configuration only: the slot
     * request timeout and the number of retained checkpoints (SchedulerUtils.createCompletedCheckpointStore reads
     * execution.checkpointing.num-retained from the JobManager configuration; set in a job's configuration it
     * changes nothing). The runner starts the scenario's MiniCluster with them.
     */
    static Map<String, String> clusterConfig(JsonNode spec) {
        Map<String, String> m = new HashMap<>();
        JsonNode cp = spec.path("checkpointing");
        if (cp.path("retained").asInt(0) > 0) {
            m.put(CheckpointingOptions.MAX_RETAINED_CHECKPOINTS.key(), cp.path("retained").asText());
        }
        // slot.request.timeout: the JobMaster's (JobMasterServiceLeadershipRunnerFactory reads it from the cluster's
        // configuration for its PhysicalSlotRequestBulkChecker).
        if (cp.path("localRecovery").asBoolean(false)) {
            // Local recovery: the JobMaster picks PreviousAllocationSlotSelectionStrategy for a streaming job when it
            // is on (SlotSelectionStrategyUtils reads StateRecoveryOptions.LOCAL_RECOVERY from the cluster's
            // configuration), and the TaskManagers keep a local copy of each checkpoint's state. By key, so both
            // Flink versions read it: 2.x's keys and 1.20's deprecated one.
            m.put("execution.state-recovery.from-local", "true");
            m.put("execution.checkpointing.local-backup.enabled", "true");
            m.put("state.backend.local-recovery", "true");
        }
        long slotTimeout = Specs.millis(spec.path("cluster").path("slotRequestTimeout"), 0);
        if (slotTimeout > 0) {
            m.put(JobManagerOptions.SLOT_REQUEST_TIMEOUT.key(), slotTimeout + " ms");
        }
        return m;
    }

    private static void putIf(Map<String, String> m, boolean cond, String key, Object value) {
        if (cond) {
            m.put(key, String.valueOf(value));
        }
    }

    Map<String, Object> run() throws Exception {
        Trace.reset();
        Ops.Staging.reset();
        PartitionSource.progress.clear();
        PartitionSource.limits.clear();
        JsonNode spec = sc.path("job");
        String input = sc.path("input").asText();
        int tms = sc.path("taskManagers").asInt(spec.path("cluster").path("taskManagers").asInt(1));
        int slots = sc.path("slotsPerTaskManager").asInt(spec.path("cluster").path("slotsPerTaskManager").asInt(0));
        if (slots <= 0) {
            slots = 1;
            for (JsonNode o : spec.path("operators")) {
                slots = Math.max(slots, o.path("parallelism").asInt(1));
            }
            for (JsonNode ph : sc.path("phases")) {
                for (JsonNode p : ph.path("parallelism")) {
                    slots = Math.max(slots, p.asInt());
                }
            }
        }
        Map<String, Object> trace = new LinkedHashMap<>();
        trace.put("name", sc.path("name").asText());
        trace.put("flinkVersion", EnvironmentInformation.getVersion());
        trace.put("taskManagers", tms);
        trace.put("slotsPerTaskManager", slots);
        List<Object> phases = new ArrayList<>();
        trace.put("phases", phases);
        long t0 = System.nanoTime();
        boolean loses = false;
        for (JsonNode ph : sc.path("phases")) {
            for (JsonNode f : ph.path("faults")) {
                loses |= "tm-lost".equals(f.path("kind").asText());
            }
        }
        Map<String, String> cc = clusterConfig(spec);
        if (spec.path("checkpointing").path("localRecovery").asBoolean(false)) {
            // Where a restore read its state (LocalState): the TaskManagers keep their local copies in a directory
            // flinkref chose, and TaskLocalStateStoreImpl's lookups are recorded.
            cc.put("taskmanager.state.local.root-dirs", LocalState.root());
            LocalState.install();
        }
        // A scenario's own cluster options (clusterConfig), for what StateLab models and Flink leaves to the cluster.
        sc.path("clusterConfig").fields().forEachRemaining(e -> cc.put(e.getKey(), e.getValue().asText()));
        mc = pool.get(tms, slots, cc);
        trace.put("clusterStartMillis", (System.nanoTime() - t0) / 1_000_000);
        try {
            String restore = null;
            int i = 0;
            for (JsonNode ph : sc.path("phases")) {
                long pause = ph.path("pauseMillis").asLong(0);
                if (i > 0 && pause > 0) {
                    Thread.sleep(pause); // time passes with no job running (TTL: processing time moves on)
                }
                // A phase may run a changed job ("job": an upgrade after the savepoint, as flink run -s submits a
                // new version of a program), with or without allowNonRestoredState.
                Map<String, Object> pt = runPhase(i, ph, ph.has("job") ? ph.get("job") : spec, input, restore);
                phases.add(pt);
                i++;
                if (pt.get("savepoint") == null && ph.path("refused").asBoolean(false)) {
                    continue; // a restore expected to be refused: the next phase tries the same savepoint
                }
                restore = (String) pt.get("savepoint");
                // The next phase may restore from one of this phase's retained checkpoints instead ("restoreCheckpoint":
                // N, as `flink run -s <dir>/chk-N` starts a new job from it after this one was cancelled with its
                // checkpoints retained).
                long chk = i < sc.path("phases").size() ? sc.path("phases").get(i).path("restoreCheckpoint").asLong(0) : 0;
                if (chk > 0 && Faults.checkpointDir != null) {
                    restore = new File(Faults.checkpointDir, "chk-" + chk).toURI().toString();
                }
                if (!"FINISHED".equals(pt.get("finalStatus")) && restore == null) {
                    break;
                }
            }
        } finally {
            if (loses || addedTaskManager) {
                // A TaskManager was terminated: the next scenario gets a fresh cluster.
                pool.close();
            }
        }
        trace.put("committed", Trace.committed());
        trace.put("millis", (System.nanoTime() - t0) / 1_000_000);
        return trace;
    }

    private Map<String, Object> runPhase(int index, JsonNode ph, JsonNode spec, String input, String restore)
            throws Exception {
        Trace.phase = index;
        Trace.resetProcessed();
        Ops.KeyedAggregate.keysOnly = sc.path("keysOnly").asBoolean(false);
        List<Faults.Fault> faults = new ArrayList<>();
        for (JsonNode f : ph.path("faults")) {
            Faults.Fault x = new Faults.Fault();
            x.kind = f.path("kind").asText();
            x.task = f.path("task").asText();
            x.afterRecords = f.path("afterRecords").asLong(0);
            x.checkpoint = f.path("checkpoint").asLong(0);
            x.millis = f.path("millis").asLong(0);
            x.taskManager = f.path("taskManager").asInt(0);
            x.whileRestartingMillis = f.path("whileRestartingMillis").asLong(-1);
            x.afterChannelState = f.path("afterChannelState").asBoolean(false);
            x.afterCompleted = f.path("afterCompleted").asLong(0);
            x.onPoll = f.path("onPoll").asBoolean(false);
            faults.add(x);
        }
        Faults.set(faults);
        Ops.AlertsOperator.watermarks.clear();
        PartitionSource.limits.clear();
        ph.path("limits").fields().forEachRemaining(e -> {
            long[] l = new long[e.getValue().size()];
            for (int k = 0; k < l.length; k++) {
                l[k] = e.getValue().get(k).asLong();
            }
            PartitionSource.limits.put(e.getKey(), l);
        });
        Map<String, Integer> par = new HashMap<>();
        ph.path("parallelism").fields().forEachRemaining(e -> par.put(e.getKey(), e.getValue().asInt()));

        File cpDir = new File(work, sc.path("name").asText() + "/checkpoints-" + index);
        Files.createDirectories(cpDir.toPath());
        Configuration conf = jobConfig(spec, sc.path("flinkConfig"), cpDir);
        if (ph.path("retainOnCancellation").asBoolean(false)) {
            // The next phase restores one of this job's checkpoints after it is cancelled: keep them
            // (ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION; the default deletes them on cancel).
            conf.addAll(Configuration.fromMap(Map.of(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION.key(),
                    "RETAIN_ON_CANCELLATION")));
        }
        if (faults.stream().anyMatch(f -> "break-latest-checkpoint".equals(f.kind)
                || "corrupt-pending-transactions".equals(f.kind))) {
            // Every state in a file of the checkpoint directory (none inlined in the metadata), so deleting a
            // checkpoint's files breaks all its state.
            conf.set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, org.apache.flink.configuration.MemorySize.ZERO);
        }
        StreamExecutionEnvironment env = new StreamExecutionEnvironment(conf);
        StreamGraph sg;
        try {
            JobBuilder.build(env, spec, input, par, null, restore != null);
            sg = env.getStreamGraph();
        } catch (RuntimeException e) {
            if (!ph.path("refused").asBoolean(false)) {
                throw e;
            }
            // A job Flink refuses to build (StreamGraph: "Forward partitioning does not allow change of
            // parallelism"): never submitted, so no status; the next phase tries the same savepoint.
            Throwable t = e;
            while (t.getCause() != null) {
                t = t.getCause();
            }
            Map<String, Object> pt = new LinkedHashMap<>();
            pt.put("phase", index);
            pt.put("finalStatus", "");
            pt.put("buildFailure", t.getClass().getName() + ": " + t.getMessage());
            return pt;
        }
        sg.setJobName(spec.path("name").asText("job"));
        if (restore != null) {
            sg.setSavepointRestoreSettings(
                    SavepointRestoreSettings.forPath(restore, ph.path("allowNonRestoredState").asBoolean(false)));
        }
        JobGraph jg = sg.getJobGraph();
        JobID id = jg.getJobID();
        Faults.checkpointDir = new File(cpDir, id.toHexString());
        Map<String, Object> pt = new LinkedHashMap<>();
        pt.put("phase", index);
        pt.put("jobId", id.toHexString());
        // Each vertex's operator ID (chaining is off: one operator each), which Flink files state under.
        Map<String, String> operatorIds = new java.util.TreeMap<>();
        for (org.apache.flink.runtime.jobgraph.JobVertex v : jg.getVertices()) {
            operatorIds.put(v.getName(), v.getOperatorIDs().get(0).getGeneratedOperatorID().toHexString());
        }
        pt.put("operatorIds", operatorIds);
        Map<String, String> vertexNames = new HashMap<>();
        for (org.apache.flink.runtime.jobgraph.JobVertex v : jg.getVertices()) {
            vertexNames.put(v.getID().toHexString(), v.getName());
        }
        localRecoveryVertices = spec.path("checkpointing").path("localRecovery").asBoolean(false) ? vertexNames : null;
        if (restore != null) {
            pt.put("restoredFrom", restore);
        }
        long start = System.nanoTime();
        LocalState.currentJob = id.toString();
        mc.submitJob(jg).get(60, TimeUnit.SECONDS);
        // Job status transitions, polled every 5 ms on a thread of their own, so that nothing the runner
        // waits for (a savepoint, a TaskManager's termination) hides a short RESTARTING.
        List<Map<String, Object>> transitions = java.util.Collections.synchronizedList(new ArrayList<>());
        java.util.concurrent.atomic.AtomicReference<JobStatus> current = new java.util.concurrent.atomic.AtomicReference<>();
        Thread poller = new Thread(() -> {
            JobStatus prev = null;
            while (true) {
                try {
                    JobStatus s = mc.getJobStatus(id).get(10, TimeUnit.SECONDS);
                    if (s != prev) {
                        // A fault may wait for the job to be RESTARTING (a region waiting for its restart delay).
                        Faults.restartingSince = s == JobStatus.RESTARTING ? System.nanoTime() : 0;
                        transitions.add(Map.of("status", s.name(), "atMillis", (System.nanoTime() - start) / 1_000_000));
                        prev = s;
                        current.set(s);
                    }
                    if (s.isGloballyTerminalState()) {
                        return;
                    }
                    Thread.sleep(5);
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    // the job is not known yet or the JobManager is busy: ask again
                }
            }
        }, "flinkref-status-" + index);
        poller.setDaemon(true);
        poller.start();
        String end = ph.path("end").asText("finish");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(ph.path("timeoutSeconds").asLong(120));
        boolean stopping = false;
        boolean stepsDone = false;
        List<Object> lost = new ArrayList<>();
        boolean watchCheckpoints = faults.stream().anyMatch(f -> f.afterChannelState || f.afterCompleted > 0);
        long statsPolled = 0;
        while (true) {
            JobStatus st = current.get();
            if (st == null) {
                Thread.sleep(5);
                continue;
            }
            if (st.isGloballyTerminalState()) {
                break;
            }
            if (watchCheckpoints && System.nanoTime() - statsPolled > 20_000_000) {
                // A fault waits for checkpoints to complete, or for one that completed unaligned with in-flight
                // data persisted.
                statsPolled = System.nanoTime();
                watchCheckpoints(id, pt);
            }
            for (Faults.Fault f : faults) {
                if ("tm-lost".equals(f.kind) && Trace.processedSoFar(f.task) >= f.afterRecords
                        && Faults.completedCheckpoints >= f.afterCompleted && f.fired.compareAndSet(false, true)) {
                    // On another thread: this loop keeps polling the job status meanwhile, so the short
                    // RESTARTING that follows is seen.
                    java.util.concurrent.CompletableFuture.runAsync(() -> {
                        try {
                            Map<String, Object> m = loseTaskManager(id, f);
                            synchronized (lost) {
                                lost.add(m);
                            }
                        } catch (Exception e) {
                            synchronized (lost) {
                                lost.add(Map.of("error", e.toString()));
                            }
                        }
                    });
                }
            }
            boolean faultsDone;
            synchronized (lost) {
                // A stalled snapshot is done when the stall is over: a stop-with-savepoint during the stall would
                // abort the stalled checkpoint (stopCheckpointScheduler: CHECKPOINT_COORDINATOR_SUSPEND) before it
                // could expire, and expire itself instead.
                faultsDone = !ph.path("awaitFaults").asBoolean(false) || (faults.stream().allMatch(Faults.Fault::done)
                        && lost.size() == faults.stream().filter(f -> "tm-lost".equals(f.kind)).count());
            }
            long runningFor = (System.nanoTime() - start) / 1_000_000
                    - (long) transitions.get(transitions.size() - 1).get("atMillis");
            if (ph.has("steps") && !stepsDone && !stopping && st == JobStatus.RUNNING && limitsReached(input)
                    && faultsDone && (!ph.path("awaitFaults").asBoolean(false) || (runningFor > 1000
                    && transitions.stream().anyMatch(t -> "RESTARTING".equals(t.get("status")))))) {
                // The phase's steps, in order, once its input is read: checkpoints and savepoints triggered by
                // hand (each awaited), and more input read between them. After faults it awaits, once the job
                // restarted and has been RUNNING again for a second (right after a fault fired the job is still
                // RUNNING, before its failover).
                runSteps(id, ph.path("steps"), input, pt, !ph.path("skipRetained").asBoolean(false));
                stepsDone = true;
            }
            if ("cancel".equals(end) && !stopping && stepsDone) {
                try {
                    mc.cancelJob(id).get(60, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    pt.put("cancelFailed", e.getCause().toString()); // the job ended first (its trace says how)
                }
                stopping = true;
            }
            if ("savepoint".equals(end) && !stopping && (stepsDone || !ph.has("steps")) && st == JobStatus.RUNNING
                    && limitsReached(input) && faultsDone
                    && (!ph.path("awaitFaults").asBoolean(false) || runningFor > 1000)
                    && (!ph.path("awaitWatermark").asBoolean(false) || watermarkReached(input, spec, par, pt))) {
                File spDir = new File(work, sc.path("name").asText() + "/savepoints");
                try {
                    String path = mc.stopWithSavepoint(id, spDir.toURI().toString(), false,
                            SavepointFormatType.CANONICAL).get(120, TimeUnit.SECONDS);
                    pt.put("savepoint", path);
                    stopping = true;
                } catch (Exception e) {
                    // Not every task runs yet (a region is restarting): try again shortly.
                    pt.put("savepointRetries", ((Integer) pt.getOrDefault("savepointRetries", 0)) + 1);
                    Thread.sleep(200);
                }
            }
            if (System.nanoTime() > deadline) {
                pt.put("timedOut", true);
                pt.put("sourceProgress", new java.util.TreeMap<>(PartitionSource.progress));
                mc.cancelJob(id).get(30, TimeUnit.SECONDS);
                deadline = Long.MAX_VALUE;
            }
            Thread.sleep(5);
        }
        mc.requestJobResult(id).get(60, TimeUnit.SECONDS);
        poller.join(10_000);
        addMissedFailing(mc, id, transitions, pt);
        addMissedRestart(mc, id, transitions, pt);
        pt.put("statusTransitions", new ArrayList<>(transitions));
        pt.put("finalStatus", current.get().name());
        synchronized (lost) {
            if (!lost.isEmpty()) {
                pt.put("lostTaskManagers", new ArrayList<>(lost));
            }
        }
        for (Faults.Fault f : faults) {
            if (("break-latest-checkpoint".equals(f.kind) || "corrupt-pending-transactions".equals(f.kind))
                    && f.fired.get()) {
                pt.put("brokenCheckpoint", f.checkpoint);
            }
        }
        describe(executionGraphInfo(id), pt);
        pt.put("events", Trace.events(index));
        if (spec.path("checkpointing").path("localRecovery").asBoolean(false)) {
            pt.put("localStateLookups", LocalState.lookups(id.toString(), vertexNames));
            pt.put("keyedRestores", LocalState.restores(id.toString(), vertexNames));
        }
        pt.put("millis", (System.nanoTime() - start) / 1_000_000);
        return pt;
    }

    /**
     * The finished job's execution graph with its exception history. MiniCluster offers it since Flink 2.0;
     * on 1.20 the archived graph alone is read (no exception history).
     */
    @SuppressWarnings("unchecked")
    private ExecutionGraphInfo executionGraphInfo(JobID id) throws Exception {
        try {
            java.lang.reflect.Method m = MiniCluster.class.getMethod("getExecutionGraphInfo", JobID.class);
            return ((java.util.concurrent.CompletableFuture<ExecutionGraphInfo>) m.invoke(mc, id)).get(30, TimeUnit.SECONDS);
        } catch (NoSuchMethodException e) {
            return new ExecutionGraphInfo(mc.getArchivedExecutionGraph(id).get(30, TimeUnit.SECONDS));
        }
    }

    /**
     * Whether every alerts subtask's watermark has caught up with the records the phase's limits hold the sources
     * at: the sources' periodic watermark (pipeline.auto-watermark-interval) after the last record read is the
     * lowest last timestamp over the held partitions minus 1 (BoundedOutOfOrderness with no delay, as
     * forMonotonousTimestamps is), and a savepoint taken before it arrives would hold timers a moment earlier's
     * watermark had not fired yet. Notes the watermark it waited for in the phase's trace.
     */
    private boolean watermarkReached(String input, JsonNode spec, Map<String, Integer> par, Map<String, Object> pt) {
        long want = Long.MAX_VALUE;
        for (Map.Entry<String, long[]> e : PartitionSource.limits.entrySet()) {
            List<List<Rec>> parts = InputStore.partitions(input, e.getKey());
            for (int p = 0; p < e.getValue().length; p++) {
                long n = Math.min(e.getValue()[p], parts.get(p).size());
                if (n > 0) {
                    want = Math.min(want, parts.get(p).get((int) n - 1).ts - 1);
                }
            }
        }
        int subtasks = 0;
        for (JsonNode o : spec.path("operators")) {
            if ("alerts".equals(o.path("kind").asText())) {
                subtasks += par.getOrDefault(o.path("id").asText(), o.path("parallelism").asInt(1));
            }
        }
        if (Ops.AlertsOperator.watermarks.size() < subtasks) {
            return false;
        }
        for (long wm : Ops.AlertsOperator.watermarks.values()) {
            if (wm < want) {
                return false;
            }
        }
        pt.put("savepointWatermarks", new java.util.TreeMap<>(Ops.AlertsOperator.watermarks));
        return true;
    }

    /**
     * Runs a phase's steps: "checkpoint" triggers a checkpoint by hand (MiniCluster.triggerCheckpoint, as
     * {@code POST /jobs/:jobid/checkpoints} does) and waits for it; "checkpoint-while-pending" triggers one, asks for
     * a second once the first's stalled snapshot began, and waits for both; "savepoint" triggers a savepoint that does not
     * stop the job (an intermediate savepoint) and waits for it; "read" raises the sources' limits to the step's
     * and waits until they are read; "checkpoint-during-read" raises them and triggers a checkpoint by hand while they
     * are read (checkpointDuringRead). Notes each step's outcome (and how long it took) and, after the last, unless
     * the phase says skipRetained, the checkpoints retained in the job's checkpoint directory (chk-N with its
     * _metadata). With local recovery on, a checkpoint step also notes the local copies each subtask holds once the
     * listing settled (LocalState.settledList).
     */
    /** The current phase's vertex names by vertex ID when its job has local recovery on (null otherwise). */
    private Map<String, String> localRecoveryVertices;

    private void runSteps(JobID id, JsonNode steps, String input, Map<String, Object> pt, boolean listRetained)
            throws Exception {
        // A checkpoint triggered before every task runs is refused ("Not all required tasks are currently
        // running", CheckpointFailureReason.NOT_ALL_REQUIRED_TASKS_RUNNING): the job is RUNNING as soon as one
        // task is, and the sources may have read their input before the sink's task has started.
        long deployed = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deployed && !allTasksRunning(id)) {
            Thread.sleep(5);
        }
        List<Object> done = new ArrayList<>();
        for (JsonNode step : steps) {
            Map<String, Object> m = new LinkedHashMap<>();
            String kind = step.path("kind").asText();
            m.put("kind", kind);
            long stepStart = System.nanoTime();
            try {
                switch (kind) {
                    // checkpoint-expires: a checkpoint the scenario makes fail (its error is the step's)
                    case "checkpoint", "checkpoint-expires" -> m.put("id", mc.triggerCheckpoint(id,
                            org.apache.flink.core.execution.CheckpointType.CONFIGURED).get(120, TimeUnit.SECONDS));
                    case "checkpoint-while-pending" -> {
                        // A checkpoint by hand whose snapshot the scenario stalls, and a second one asked for once
                        // the stall began (the first is pending): CheckpointRequestDecider queues the second (not
                        // forced, max-concurrent-checkpoints 1) until the first ends. Notes when it was asked for
                        // (wall clock ms, as the statistics' trigger timestamps).
                        // A skip- or stall-checkpoint fault with no checkpoint id is about the first checkpoint this
                        // step triggers (the next id: nothing else is triggered meanwhile); Flink may have taken
                        // periodic checkpoints of its own as the job started, so the id is read here.
                        long next = latestCheckpointId(id) + 1;
                        if (Faults.armStep(next)) {
                            m.put("armed", next);
                        }
                        var first = mc.triggerCheckpoint(id, org.apache.flink.core.execution.CheckpointType.CONFIGURED);
                        long stalled = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                        while (System.nanoTime() < stalled && !Faults.active.stream()
                                .filter(f -> "stall-checkpoint".equals(f.kind)).allMatch(f -> f.fired.get())) {
                            Thread.sleep(1);
                        }
                        m.put("requestedAt", System.currentTimeMillis());
                        var second = mc.triggerCheckpoint(id, org.apache.flink.core.execution.CheckpointType.CONFIGURED);
                        m.put("id", first.get(120, TimeUnit.SECONDS));
                        m.put("second", second.get(120, TimeUnit.SECONDS));
                    }
                    case "savepoint" -> m.put("path", mc.triggerSavepoint(id,
                            new File(work, sc.path("name").asText() + "/savepoints").toURI().toString(), false,
                            SavepointFormatType.CANONICAL).get(120, TimeUnit.SECONDS));
                    case "checkpoint-during-read" -> checkpointDuringRead(id, step, input, m);
                    case "read" -> {
                        step.path("limits").fields().forEachRemaining(e -> {
                            long[] l = new long[e.getValue().size()];
                            for (int k = 0; k < l.length; k++) {
                                l[k] = e.getValue().get(k).asLong();
                            }
                            PartitionSource.limits.put(e.getKey(), l);
                        });
                        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                        while (!limitsReached(input) && System.nanoTime() < until) {
                            Thread.sleep(5);
                        }
                        m.put("read", limitsReached(input));
                    }
                    case "add-taskmanager" -> {
                        // A TaskManager joins (as a resource manager would start one); in reactive mode the
                        // adaptive scheduler restarts the job with the new slots. Waits until every task runs at a
                        // higher total parallelism.
                        int before = totalParallelism(id);
                        mc.startTaskManager();
                        addedTaskManager = true;
                        long rescaled = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                        int now = before;
                        while (System.nanoTime() < rescaled) {
                            now = totalParallelism(id);
                            if (now > before && allTasksRunning(id)) {
                                break;
                            }
                            Thread.sleep(20);
                        }
                        m.put("parallelism", now);
                        m.put("read", now > before);
                    }
                    default -> throw new IllegalArgumentException("unknown step " + kind);
                }
            } catch (Exception e) {
                m.put("error", e.toString());
            }
            if (kind.equals("checkpoint") && localRecoveryVertices != null) {
                // The local copies each subtask holds once the checkpoint's completion reached the tasks.
                m.put("localCheckpoints", LocalState.settledList(id.toString(), localRecoveryVertices));
            }
            if (kind.equals("checkpoint-expires")) {
                // The next step starts once the stalled snapshot is over (StateLab's stall is virtual time that has
                // passed by then): a checkpoint triggered during the stall would wait behind it and expire too.
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (System.nanoTime() < until && !Faults.active.stream()
                        .filter(f -> "stall-checkpoint".equals(f.kind)).allMatch(Faults.Fault::done)) {
                    Thread.sleep(5);
                }
            }
            m.put("millis", (System.nanoTime() - stepStart) / 1_000_000);
            done.add(m);
        }
        pt.put("steps", done);
        if (listRetained) {
            // (a phase with periodic checkpoints skips it: its set of retained checkpoints never rests)
            pt.put("retainedCheckpoints", retainedCheckpoints());
        }
    }

    /**
     * The "checkpoint-during-read" step: raises the sources' limits to the step's, waits until every partition given
     * new records has read a quarter of them, triggers a checkpoint by hand (as {@code POST /jobs/:jobid/checkpoints}
     * does) while the sources go on reading, waits for it and then for the limits. Notes the checkpoint's id and
     * the offsets read when it was triggered ("triggeredAt").
     */
    private void checkpointDuringRead(JobID id, JsonNode step, String input, Map<String, Object> m) throws Exception {
        Map<String, Long> want = new java.util.TreeMap<>();
        step.path("limits").fields().forEachRemaining(e -> {
            List<List<Rec>> parts = InputStore.partitions(input, e.getKey());
            long[] l = new long[e.getValue().size()];
            for (int k = 0; k < l.length; k++) {
                l[k] = e.getValue().get(k).asLong();
                String key = e.getKey() + "/" + k;
                long from = PartitionSource.progress.getOrDefault(key, 0L);
                long to = Math.min(l[k], parts.get(k).size());
                if (to > from) {
                    want.put(key, from + Math.max(1, (to - from) / 4));
                }
            }
            PartitionSource.limits.put(e.getKey(), l);
        });
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < until && want.entrySet().stream()
                .anyMatch(w -> PartitionSource.progress.getOrDefault(w.getKey(), 0L) < w.getValue())) {
            Thread.sleep(1);
        }
        m.put("triggeredAt", new java.util.TreeMap<>(PartitionSource.progress));
        m.put("id", mc.triggerCheckpoint(id, org.apache.flink.core.execution.CheckpointType.CONFIGURED)
                .get(120, TimeUnit.SECONDS));
        until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!limitsReached(input) && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        m.put("read", limitsReached(input));
    }

    /** Whether a step started a TaskManager: the cluster's shape changed, the next scenario gets a fresh one. */
    private boolean addedTaskManager;

    private int totalParallelism(JobID id) throws Exception {
        int n = 0;
        for (AccessExecutionJobVertex v : mc.getExecutionGraph(id).get(10, TimeUnit.SECONDS).getVerticesTopologically()) {
            n += v.getParallelism();
        }
        return n;
    }

    private boolean allTasksRunning(JobID id) throws Exception {
        AccessExecutionGraph g = mc.getExecutionGraph(id).get(10, TimeUnit.SECONDS);
        for (AccessExecutionVertex v : g.getAllExecutionVertices()) {
            if (v.getExecutionState() != ExecutionState.RUNNING) {
                return false;
            }
        }
        return true;
    }

    /**
     * The checkpoints with a _metadata file in the running job's checkpoint directory, once that set has not
     * changed for two seconds: a subsumed checkpoint is deleted asynchronously (CheckpointsCleaner), after the
     * checkpoint that subsumed it completed. The wait also gives the last checkpoint's notifications
     * (notifyCheckpointComplete, asynchronous too) time to reach the tasks before a phase ends.
     */
    private static List<Long> retainedCheckpoints() throws InterruptedException {
        List<Long> prev = null;
        long stableSince = System.nanoTime();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < until) {
            List<Long> now = new ArrayList<>();
            File dir = Faults.checkpointDir;
            File[] chks = dir == null ? null
                    : dir.listFiles((d, n) -> n.startsWith("chk-") && new File(d, n + "/_metadata").isFile());
            for (File c : chks == null ? new File[0] : chks) {
                now.add(Long.parseLong(c.getName().substring("chk-".length())));
            }
            java.util.Collections.sort(now);
            if (!now.equals(prev)) {
                prev = now;
                stableSince = System.nanoTime();
            } else if (System.nanoTime() - stableSince > TimeUnit.SECONDS.toNanos(2)) {
                return now;
            }
            Thread.sleep(20);
        }
        return prev;
    }

    /** Whether every partition held back by the phase's limits has been read up to its limit. */
    private boolean limitsReached(String input) {
        for (Map.Entry<String, long[]> e : PartitionSource.limits.entrySet()) {
            List<List<Rec>> parts = InputStore.partitions(input, e.getKey());
            for (int p = 0; p < e.getValue().length; p++) {
                long want = Math.min(e.getValue()[p], parts.get(p).size());
                if (want > 0 && PartitionSource.progress.getOrDefault(e.getKey() + "/" + p, 0L) < want) {
                    return false;
                }
            }
        }
        return true;
    }

    /** Terminates a TaskManager and notes which subtasks ran on it. */
    private Map<String, Object> loseTaskManager(JobID id, Faults.Fault f) throws Exception {
        AccessExecutionGraph g = mc.getExecutionGraph(id).get(10, TimeUnit.SECONDS);
        Map<String, List<String>> byTm = new LinkedHashMap<>();
        for (AccessExecutionVertex v : g.getAllExecutionVertices()) {
            TaskManagerLocation loc = v.getCurrentAssignedResourceLocation();
            if (loc != null) {
                byTm.computeIfAbsent(loc.getResourceID().toString(), k -> new ArrayList<>()).add(taskName(v));
            }
        }
        int index = f.taskManager;
        String host = null;
        for (AccessExecutionVertex v : g.getAllExecutionVertices()) {
            if (taskName(v).equals(f.task) && v.getCurrentAssignedResourceLocation() != null) {
                host = v.getCurrentAssignedResourceLocation().getResourceID().toString();
            }
        }
        if (host != null) {
            // The TaskManager that runs the watched subtask, as StateLab crashes the subtask's TaskManager.
            // MiniCluster terminates by index; its list of TaskExecutors is private, so read it reflectively.
            java.lang.reflect.Field fl = MiniCluster.class.getDeclaredField("taskManagers");
            fl.setAccessible(true);
            List<?> tms = (List<?>) fl.get(mc);
            for (int k = 0; k < tms.size(); k++) {
                Object rid = tms.get(k).getClass().getMethod("getResourceID").invoke(tms.get(k));
                if (host.equals(String.valueOf(rid))) {
                    index = k;
                }
            }
        }
        mc.terminateTaskManager(index).get(30, TimeUnit.SECONDS);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("index", index);
        m.put("resourceId", host);
        m.put("trigger", f.task + " after " + f.afterRecords + " records");
        m.put("subtasksByTaskManager", byTm);
        if (f.millis >= 0) {
            // A replacement TaskManager, as a resource manager would start one.
            mc.startTaskManager();
        }
        return m;
    }

    static String taskName(AccessExecutionVertex v) {
        // "Source: source (1/2)" -> "source#0": StateLab's task names (a FLIP-27 source's vertex name
        // carries the "Source: " prefix).
        String n = v.getTaskNameWithSubtaskIndex();
        int k = n.indexOf(" (");
        n = k > 0 ? n.substring(0, k) : n;
        if (n.startsWith("Source: ")) {
            n = n.substring("Source: ".length());
        }
        return n + "#" + v.getParallelSubtaskIndex();
    }

    /**
     * Reads Flink's checkpoint statistics for the faults that wait on them: how many checkpoints (not savepoints)
     * completed, and the first that completed unaligned with persisted in-flight data (channel state).
     */
    /** The id of the latest checkpoint or savepoint the job triggered (Flink's statistics), 0 before any. */
    private long latestCheckpointId(JobID id) throws Exception {
        CheckpointStatsSnapshot cs = mc.getExecutionGraph(id).get(10, TimeUnit.SECONDS).getCheckpointStatsSnapshot();
        long latest = 0;
        if (cs != null) {
            for (AbstractCheckpointStats s : cs.getHistory().getCheckpoints()) {
                latest = Math.max(latest, s.getCheckpointId());
            }
        }
        return latest;
    }

    private void watchCheckpoints(JobID id, Map<String, Object> pt) {
        try {
            CheckpointStatsSnapshot cs = mc.getExecutionGraph(id).get(10, TimeUnit.SECONDS).getCheckpointStatsSnapshot();
            if (cs == null) {
                return;
            }
            long found = 0;
            long completed = 0;
            for (AbstractCheckpointStats s : cs.getHistory().getCheckpoints()) {
                if (!s.getStatus().name().equals("COMPLETED") || s.getProperties().isSavepoint()) {
                    continue;
                }
                completed++;
                if (s.isUnalignedCheckpoint() && s.getPersistedData() > 0
                        && (found == 0 || s.getCheckpointId() < found)) {
                    found = s.getCheckpointId();
                }
            }
            Faults.completedCheckpoints = Math.max(Faults.completedCheckpoints, completed);
            if (found > 0 && Faults.channelStateCheckpoint == 0) {
                Faults.channelStateCheckpoint = found;
                pt.put("channelStateCheckpoint", found);
            }
        } catch (Exception e) {
            // restarting, or the JobManager is busy: ask again
        }
    }

    private static void describe(ExecutionGraphInfo info, Map<String, Object> pt) {
        AccessExecutionGraph g = info.getArchivedExecutionGraph();
        List<Object> vertices = new ArrayList<>();
        List<String> restarted = new ArrayList<>();
        Map<String, Integer> attempts = new LinkedHashMap<>();
        Map<String, Long> deployedAt = new LinkedHashMap<>();
        for (AccessExecutionJobVertex jv : g.getVerticesTopologically()) {
            Map<String, Object> v = new LinkedHashMap<>();
            v.put("name", jv.getName());
            v.put("parallelism", jv.getParallelism());
            v.put("maxParallelism", jv.getMaxParallelism());
            List<Object> subs = new ArrayList<>();
            for (AccessExecutionVertex ev : jv.getTaskVertices()) {
                int a = ev.getCurrentExecutionAttempt().getAttemptNumber();
                String t = taskName(ev);
                attempts.put(t, a);
                if (a > 0) {
                    restarted.add(t);
                }
                if (a > 0) {
                    // When the last restart deployed it (wall clock, ms): the order regions restarted in.
                    deployedAt.put(t, ev.getCurrentExecutionAttempt().getStateTimestamp(ExecutionState.DEPLOYING));
                }
                TaskManagerLocation loc = ev.getCurrentAssignedResourceLocation();
                subs.add(Map.of("subtask", ev.getParallelSubtaskIndex(), "attempt", a, "status",
                        ev.getExecutionState().name(), "taskManager", loc == null ? "" : loc.getResourceID().toString()));
            }
            v.put("subtasks", subs);
            vertices.add(v);
        }
        pt.put("vertices", vertices);
        org.apache.flink.runtime.executiongraph.ErrorInfo why = g.getFailureInfo();
        if (why != null) {
            // Why the job failed, also when it failed before any task ran (a refused restore).
            String msg = why.getExceptionAsString();
            int nl = msg.indexOf('\n');
            Throwable t = why.getException().deserializeError(Runner.class.getClassLoader());
            while (t.getCause() != null) {
                t = t.getCause();
            }
            pt.put("failure", Map.of("exception", nl > 0 ? msg.substring(0, nl) : msg,
                    "rootCause", t.getClass().getName() + ": " + t.getMessage()));
        }
        pt.put("attempts", attempts);
        pt.put("restartedSubtasks", restarted);
        pt.put("redeployedAt", deployedAt);
        List<Object> ex = new ArrayList<>();
        for (RootExceptionHistoryEntry e : info.getExceptionHistory()) {
            ex.add(exception(e, true));
        }
        pt.put("exceptions", ex);
        CheckpointStatsSnapshot cs = g.getCheckpointStatsSnapshot();
        Map<String, Object> c = new LinkedHashMap<>();
        if (cs != null) {
            c.put("completed", cs.getCounts().getNumberOfCompletedCheckpoints());
            c.put("failed", cs.getCounts().getNumberOfFailedCheckpoints());
            c.put("restored", cs.getCounts().getNumberOfRestoredCheckpoints());
            c.put("total", cs.getCounts().getTotalNumberOfCheckpoints());
            List<Object> h = new ArrayList<>();
            for (AbstractCheckpointStats s : cs.getHistory().getCheckpoints()) {
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("id", s.getCheckpointId());
                m.put("status", s.getStatus().name());
                m.put("savepoint", s.getProperties().isSavepoint());
                m.put("unaligned", s.isUnalignedCheckpoint());
                // When the coordinator triggered it and when the last subtask acknowledged it (wall clock, ms;
                // AbstractCheckpointStats.getTriggerTimestamp / getLatestAckTimestamp, -1 without an ack), and when
                // a failed one failed (FailedCheckpointStats.getFailureTimestamp)
                m.put("triggerTimestamp", s.getTriggerTimestamp());
                m.put("latestAckTimestamp", s.getLatestAckTimestamp());
                if (s instanceof org.apache.flink.runtime.checkpoint.FailedCheckpointStats f) {
                    m.put("failureTimestamp", f.getFailureTimestamp());
                }
                // Its full state size and what it wrote itself (an incremental checkpoint's new files; bytes):
                // AbstractCheckpointStats.getStateSize / getCheckpointedSize, the web UI's "Full Checkpoint Data
                // Size" and "Checkpointed Data Size"
                m.put("stateSize", s.getStateSize());
                m.put("checkpointedSize", s.getCheckpointedSize());
                // In-flight data persisted as channel state (bytes), and by which vertex
                m.put("persistedData", s.getPersistedData());
                Map<String, Long> by = new java.util.TreeMap<>();
                for (AccessExecutionJobVertex jv : g.getVerticesTopologically()) {
                    org.apache.flink.runtime.checkpoint.TaskStateStats ts = s.getTaskStateStats(jv.getJobVertexId());
                    if (ts == null) {
                        continue;
                    }
                    for (org.apache.flink.runtime.checkpoint.SubtaskStateStats ss : ts.getSubtaskStats()) {
                        if (ss != null && ss.getPersistedData() > 0) {
                            by.put(jv.getName() + "#" + ss.getSubtaskIndex(), ss.getPersistedData());
                        }
                    }
                }
                m.put("persistedBy", by);
                // How long each subtask's barrier alignment took (ms; aligned checkpoints: from its first barrier
                // to its last), SubtaskStateStats.getAlignmentDuration
                Map<String, Long> align = new java.util.TreeMap<>();
                for (AccessExecutionJobVertex jv : g.getVerticesTopologically()) {
                    org.apache.flink.runtime.checkpoint.TaskStateStats ts = s.getTaskStateStats(jv.getJobVertexId());
                    if (ts == null) {
                        continue;
                    }
                    for (org.apache.flink.runtime.checkpoint.SubtaskStateStats ss : ts.getSubtaskStats()) {
                        if (ss != null && ss.getAlignmentDuration() >= 0) {
                            align.put(jv.getName() + "#" + ss.getSubtaskIndex(), ss.getAlignmentDuration());
                        }
                    }
                }
                m.put("alignmentBy", align);
                if (s instanceof FailedCheckpointStats f && f.getFailureMessage() != null) {
                    m.put("failure", f.getFailureMessage());
                }
                h.add(0, m);
            }
            c.put("history", h);
            RestoredCheckpointStats r = cs.getLatestRestoredCheckpoint();
            if (r != null) {
                c.put("latestRestored", Map.of("id", r.getCheckpointId(), "savepoint", r.getProperties().isSavepoint()));
            }
        }
        pt.put("checkpoints", c);
    }

    private static Map<String, Object> exception(ExceptionHistoryEntry e, boolean root) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("global", e.isGlobal());
        if (e.getFailingTaskName() != null) {
            m.put("task", e.getFailingTaskName());
        }
        String msg = e.getExceptionAsString();
        int nl = msg.indexOf('\n');
        m.put("exception", nl > 0 ? msg.substring(0, nl) : msg);
        Throwable cause = e.getException().deserializeError(Runner.class.getClassLoader());
        while (cause.getCause() != null && !(cause instanceof Faults.InjectedFailure)) {
            cause = cause.getCause();
        }
        m.put("rootCause", cause.getClass().getName() + ": " + cause.getMessage());
        if (e.getTaskManagerLocation() != null) {
            m.put("taskManager", String.valueOf(e.getTaskManagerLocation().getResourceID()));
        }
        if (root && e instanceof RootExceptionHistoryEntry r) {
            List<Object> conc = new ArrayList<>();
            for (ExceptionHistoryEntry c : r.getConcurrentExceptions()) {
                conc.add(exception(c, false));
            }
            if (!conc.isEmpty()) {
                m.put("concurrent", conc);
            }
        }
        return m;
    }

    /**
     * A restart that the status polls missed: on a busy machine the poll thread can sleep through the whole
     * RESTARTING of a region restart (the restart delay, 100 ms in the catalogue). The execution graph keeps the
     * time it last entered each status: when it entered RESTARTING and no poll saw it, RESTARTING and the RUNNING
     * after it go in at their times (mapped through INITIALIZING, which a job enters once), marked as read from
     * the execution graph.
     */
    static void addMissedRestart(MiniCluster mc, JobID id, List<Map<String, Object>> transitions,
            Map<String, Object> pt) {
        synchronized (transitions) {
            Long initAt = null;
            for (Map<String, Object> t : transitions) {
                if ("RESTARTING".equals(t.get("status"))) {
                    return;
                }
                if ("INITIALIZING".equals(t.get("status")) && initAt == null) {
                    initAt = ((Number) t.get("atMillis")).longValue();
                }
            }
            try {
                org.apache.flink.runtime.executiongraph.ArchivedExecutionGraph g =
                        mc.getArchivedExecutionGraph(id).get(30, TimeUnit.SECONDS);
                long restarting = g.getStatusTimestamp(JobStatus.RESTARTING);
                long init = g.getStatusTimestamp(JobStatus.INITIALIZING);
                long running = g.getStatusTimestamp(JobStatus.RUNNING);
                if (restarting <= 0 || init <= 0 || initAt == null) {
                    return;
                }
                long offset = initAt - init;
                List<Map<String, Object>> add = new ArrayList<>();
                add.add(new java.util.HashMap<>(Map.of("status", "RESTARTING", "atMillis", restarting + offset,
                        "fromExecutionGraph", true)));
                if (running > restarting) {
                    add.add(new java.util.HashMap<>(Map.of("status", "RUNNING", "atMillis", running + offset,
                            "fromExecutionGraph", true)));
                }
                transitions.addAll(add);
                // By time, a globally terminal status last whatever the mapping's error.
                transitions.sort(java.util.Comparator.<Map<String, Object>>comparingInt(
                        t -> JobStatus.valueOf((String) t.get("status")).isGloballyTerminalState() ? 1 : 0)
                        .thenComparingLong(t -> ((Number) t.get("atMillis")).longValue()));
            } catch (Exception e) {
                pt.put("statusTimestampsError", e.toString());
            }
        }
    }

    /**
     * A job that fails for good passes through FAILING while the scheduler cancels its tasks (DefaultScheduler:
     * ExecutionGraph.failJob, then FAILED once every task is terminal). On a MiniCluster that can take less than
     * the 5 ms between two polls, so the polled path may go RUNNING -> FAILED. The execution graph keeps the time
     * it entered each status: when it entered FAILING and the polls missed it, FAILING goes in before FAILED,
     * marked as read from the execution graph.
     */
    static void addMissedFailing(org.apache.flink.runtime.minicluster.MiniCluster mc, org.apache.flink.api.common.JobID id,
            List<Map<String, Object>> transitions, Map<String, Object> pt) {
        synchronized (transitions) {
            int n = transitions.size();
            if (n == 0 || !"FAILED".equals(transitions.get(n - 1).get("status"))
                    || (n >= 2 && "FAILING".equals(transitions.get(n - 2).get("status")))) {
                return;
            }
            try {
                org.apache.flink.runtime.executiongraph.ArchivedExecutionGraph g =
                        mc.getArchivedExecutionGraph(id).get(30, TimeUnit.SECONDS);
                long failing = g.getStatusTimestamp(JobStatus.FAILING);
                long failed = g.getStatusTimestamp(JobStatus.FAILED);
                if (failing > 0 && failing <= failed) {
                    Map<String, Object> m = new java.util.HashMap<>();
                    m.put("status", JobStatus.FAILING.name());
                    m.put("atMillis", transitions.get(n - 1).get("atMillis"));
                    m.put("fromExecutionGraph", true);
                    transitions.add(n - 1, m);
                }
            } catch (Exception e) {
                pt.put("statusTimestampsError", e.toString());
            }
        }
    }
}
