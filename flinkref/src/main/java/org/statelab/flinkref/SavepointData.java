package org.statelab.flinkref;

import java.io.DataInputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.IncrementalRemoteKeyedStateHandle;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupsStateHandle;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.runtime.state.StreamStateHandle;
import org.apache.flink.runtime.state.filesystem.FileStateHandle;
import org.apache.flink.runtime.state.filesystem.RelativeFileStateHandle;
import org.apache.flink.runtime.state.memory.ByteStreamStateHandle;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.SerializationFeature;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.util.Collector;

/**
 * Savepoints and retained checkpoints from a real Flink, as test data for StateLab's savepoint reader. A small
 * job keeps keyed ValueState, ListState and MapState, operator ListState (split-distribute and union),
 * BroadcastState, a FLIP-27 source's reader state and a two-phase sink's pending transactions. For the
 * hashmap and rocksdb backends it takes a canonical savepoint, a native savepoint and a retained checkpoint,
 * copies each (its _metadata, and the files it points to up to 4 KiB each, so the data stays small) to
 * OUTDIR/flink-VERSION/BACKEND-KIND/, and writes
 * beside it:
 *
 * <ul>
 *   <li>metadata.json: what Flink's own {@link Checkpoints#loadCheckpointMetadata} reads from _metadata
 *       (operators, parallelism, max parallelism, each subtask's operator-state handles with their states'
 *       names, distribution modes and offsets, keyed-state handles with key-group ranges and offsets);
 *   <li>contents.json: what each operator subtask held when it took that snapshot (recorded from inside the
 *       job at the snapshot), so a reader that decodes the state can be checked.
 * </ul>
 */
final class SavepointData {
    private SavepointData() {}

    static void run(File out) throws Exception {
        String version = EnvironmentInformation.getVersion();
        File base = new File(out, "flink-" + version);
        Files.createDirectories(base.toPath());
        File input = new File(base, "input.json");
        List<List<Map<String, Object>>> words = List.of(new ArrayList<>(), new ArrayList<>());
        String[] vocab = {"flink", "state", "stream", "key", "group", "barrier", "window", "sink"};
        for (int i = 0; i < 24; i++) {
            words.get(i % 2).add(Map.of("text", vocab[(i * 5) % vocab.length], "ts", i));
        }
        List<List<Map<String, Object>>> rules = List.of(List.of(Map.of("text", "block sink", "ts", 0),
                Map.of("text", "block window", "ts", 1)));
        new ObjectMapper().writeValue(input, Map.of("sources", Map.of("words", words, "rules", rules)));
        Configuration conf = new Configuration();
        MiniCluster mc = new MiniCluster(new MiniClusterConfiguration.Builder().setConfiguration(conf)
                .setNumTaskManagers(1).setNumSlotsPerTaskManager(4).build());
        mc.start();
        try {
            for (String backend : List.of("hashmap", "rocksdb")) {
                take(mc, base, input.getPath(), backend);
            }
        } finally {
            mc.closeAsync().get(60, TimeUnit.SECONDS);
        }
        Files.delete(input.toPath());
    }

    private static void take(MiniCluster mc, File base, String input, String backend) throws Exception {
        Trace.reset();
        PartitionSource.progress.clear();
        PartitionSource.limits.put("words", new long[] {Long.MAX_VALUE - 1, Long.MAX_VALUE - 1});
        PartitionSource.limits.put("rules", new long[] {Long.MAX_VALUE - 1});
        File work = Files.createTempDirectory("flinkref-savepoints").toFile();
        Map<String, String> m = new LinkedHashMap<>();
        m.put(StateBackendOptions.STATE_BACKEND.key(), backend);
        m.put(CheckpointingOptions.CHECKPOINT_STORAGE.key(), "filesystem");
        m.put(CheckpointingOptions.CHECKPOINTS_DIRECTORY.key(), new File(work, "checkpoints").toURI().toString());
        m.put(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION.key(), "RETAIN_ON_CANCELLATION");
        m.put(CheckpointingOptions.INCREMENTAL_CHECKPOINTS.key(), "true");
        // Checkpoints only when asked, so each snapshot holds exactly the whole input.
        m.put(CheckpointingOptions.CHECKPOINTING_INTERVAL.key(), "1 h");
        StreamExecutionEnvironment env = new StreamExecutionEnvironment(Configuration.fromMap(m));
        env.disableOperatorChaining();
        DataStream<Rec> src = env.fromSource(new PartitionSource("words", input, 2),
                WatermarkStrategy.<Rec>forMonotonousTimestamps().withTimestampAssigner((r, t) -> r.ts), "words",
                JobBuilder.REC).uid("words").setParallelism(2);
        DataStream<Rec> rules = env.fromSource(new PartitionSource("rules", input, 1),
                WatermarkStrategy.noWatermarks(), "rules", JobBuilder.REC).uid("rules").setParallelism(1);
        DataStream<Rec> keyed = src.keyBy(r -> r.key, Types.STRING).process(new KeyedZoo(), JobBuilder.REC)
                .name("keyed").uid("keyed").setParallelism(2).setMaxParallelism(128);
        DataStream<Rec> ops = keyed.map(new OperatorZoo(), JobBuilder.REC).name("operator").uid("operator")
                .setParallelism(2);
        DataStream<Rec> filtered = ops.connect(rules.broadcast(Ops.BroadcastFilter.RULES))
                .process(new Ops.BroadcastFilter("filter"), JobBuilder.REC).name("filter").uid("filter")
                .setParallelism(2);
        filtered.transform("sink", Types.VOID, new Ops.TwoPhaseSink("sink")).uid("sink").setParallelism(2);
        StreamGraph sg = env.getStreamGraph();
        sg.setJobName("statelab savepoint zoo");
        JobGraph jg = sg.getJobGraph();
        JobID id = jg.getJobID();
        // Operator IDs are hashes of the uids (StreamGraphHasherV2); name them for the reader's tests.
        names.clear();
        for (org.apache.flink.runtime.jobgraph.JobVertex v : jg.getVertices()) {
            for (org.apache.flink.runtime.OperatorIDPair p : v.getOperatorIDs()) {
                names.put(p.getGeneratedOperatorID().toHexString(), v.getName());
            }
        }
        mc.submitJob(jg).get(60, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (mc.getJobStatus(id).get() != JobStatus.RUNNING
                || PartitionSource.progress.getOrDefault("words/0", 0L) < 12
                || PartitionSource.progress.getOrDefault("words/1", 0L) < 12
                || PartitionSource.progress.getOrDefault("rules/0", 0L) < 2) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the savepoint job did not read its input in 120 s");
            }
            Thread.sleep(20);
        }
        Thread.sleep(500); // let the records reach the last operator before the barriers follow them
        File sp = new File(work, "savepoints");
        String canonical = retry(() -> mc.triggerSavepoint(id, sp.toURI().toString(), false,
                SavepointFormatType.CANONICAL).get(120, TimeUnit.SECONDS));
        save(base, backend + "-savepoint-canonical", canonical);
        String nat = retry(() -> mc.triggerSavepoint(id, sp.toURI().toString(), false, SavepointFormatType.NATIVE)
                .get(120, TimeUnit.SECONDS));
        save(base, backend + "-savepoint-native", nat);
        String chk = retry(() -> mc.triggerCheckpoint(id).get(120, TimeUnit.SECONDS));
        save(base, backend + "-checkpoint", chk);
        mc.cancelJob(id).get(60, TimeUnit.SECONDS);
        while (!mc.getJobStatus(id).get().isGloballyTerminalState()) {
            Thread.sleep(20);
        }
    }

    private static final Map<String, String> names = new TreeMap<>();

    interface Trigger {
        String get() throws Exception;
    }

    /** A snapshot refused while some task is still starting (RocksDB opens slowly) is asked for again. */
    private static String retry(Trigger t) throws Exception {
        for (int i = 0; ; i++) {
            try {
                return t.get();
            } catch (Exception e) {
                if (i >= 50) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    /** Copies the snapshot at pointer into base/name and writes metadata.json and contents.json beside it. */
    private static void save(File base, String name, String pointer) throws Exception {
        Path src = Path.of(java.net.URI.create(pointer.startsWith("file:") ? pointer : "file:" + pointer));
        Path dst = base.toPath().resolve(name);
        if (Files.exists(dst)) {
            try (Stream<Path> w = Files.walk(dst)) {
                w.sorted((a, b) -> b.compareTo(a)).forEach(p -> p.toFile().delete());
            }
        }
        Files.createDirectories(dst);
        Files.copy(src.resolve("_metadata"), dst.resolve("_metadata"), StandardCopyOption.REPLACE_EXISTING);
        CheckpointMetadata md;
        try (DataInputStream in = new DataInputStream(new FileInputStream(src.resolve("_metadata").toFile()))) {
            md = Checkpoints.loadCheckpointMetadata(in, SavepointData.class.getClassLoader(), src.toString());
        }
        // A retained checkpoint's files live beside its chk-N directory (shared/, taskowned/); files are
        // copied under their path relative to the checkpoint directory's parent.
        Path root = src.getParent();
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("flinkVersion", EnvironmentInformation.getVersion());
        doc.put("kind", name);
        doc.put("checkpointId", md.getCheckpointId());
        doc.put("masterStates", md.getMasterStates().size());
        List<Object> ops = new ArrayList<>();
        for (OperatorState os : md.getOperatorStates()) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("operatorId", os.getOperatorID().toHexString());
            o.put("vertex", names.get(os.getOperatorID().toHexString()));
            o.put("parallelism", os.getParallelism());
            o.put("maxParallelism", os.getMaxParallelism());
            if (os.getCoordinatorState() != null) {
                o.put("coordinatorStateBytes", os.getCoordinatorState().getData().length);
            }
            List<Object> subs = new ArrayList<>();
            for (Map.Entry<Integer, OperatorSubtaskState> e : new TreeMap<>(os.getSubtaskStates()).entrySet()) {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("subtask", e.getKey());
                OperatorSubtaskState st = e.getValue();
                s.put("managedOperatorState", operatorHandles(st.getManagedOperatorState(), src, root, dst));
                s.put("rawOperatorState", operatorHandles(st.getRawOperatorState(), src, root, dst));
                s.put("managedKeyedState", keyedHandles(st.getManagedKeyedState(), src, root, dst));
                s.put("rawKeyedState", keyedHandles(st.getRawKeyedState(), src, root, dst));
                subs.add(s);
            }
            o.put("subtasks", subs);
            ops.add(o);
        }
        doc.put("operators", ops);
        ObjectMapper om = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT)
                .enable(SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS);
        om.writeValue(dst.resolve("metadata.json").toFile(), doc);
        Map<String, Object> contents = new TreeMap<>();
        for (Map<String, Object> ev : Trace.events(0)) {
            if (Long.valueOf(md.getCheckpointId()).equals(ev.get("checkpoint"))) {
                contents.put((String) ev.get("task"), ev.get("state"));
            }
        }
        om.writeValue(dst.resolve("contents.json").toFile(), Map.of("checkpointId", md.getCheckpointId(),
                "note", "what each subtask held at this snapshot, recorded inside the job", "subtasks", contents));
    }

    private static List<Object> operatorHandles(Iterable<OperatorStateHandle> hs, Path src, Path root, Path dst)
            throws IOException {
        List<Object> out = new ArrayList<>();
        for (OperatorStateHandle h : hs) {
            Map<String, Object> m = new LinkedHashMap<>();
            Map<String, Object> states = new TreeMap<>();
            h.getStateNameToPartitionOffsets().forEach((n, meta) -> states.put(n,
                    Map.of("mode", meta.getDistributionMode().name(), "offsets",
                            Arrays.stream(meta.getOffsets()).boxed().toList())));
            m.put("states", states);
            m.put("handle", stream(h.getDelegateStateHandle(), src, root, dst));
            out.add(m);
        }
        return out;
    }

    private static List<Object> keyedHandles(Iterable<KeyedStateHandle> hs, Path src, Path root, Path dst)
            throws IOException {
        List<Object> out = new ArrayList<>();
        for (KeyedStateHandle h : hs) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("type", h.getClass().getSimpleName());
            KeyGroupRange r = h.getKeyGroupRange();
            m.put("keyGroupRange", Map.of("start", r.getStartKeyGroup(), "end", r.getEndKeyGroup()));
            if (h instanceof KeyGroupsStateHandle k) {
                List<Long> offs = new ArrayList<>();
                for (int g = r.getStartKeyGroup(); g <= r.getEndKeyGroup(); g++) {
                    offs.add(k.getOffsetForKeyGroup(g));
                }
                m.put("keyGroupOffsets", offs);
                m.put("handle", stream(k.getDelegateStateHandle(), src, root, dst));
            } else if (h instanceof IncrementalRemoteKeyedStateHandle inc) {
                m.put("checkpointId", inc.getCheckpointId());
                m.put("metaData", stream(inc.getMetaDataStateHandle(), src, root, dst));
                List<Object> shared = new ArrayList<>();
                for (var hp : inc.getSharedState()) {
                    shared.add(Map.of("localPath", hp.getLocalPath(), "handle", stream(hp.getHandle(), src, root, dst)));
                }
                m.put("sharedState", shared);
                List<Object> priv = new ArrayList<>();
                for (var hp : inc.getPrivateState()) {
                    priv.add(Map.of("localPath", hp.getLocalPath(), "handle", stream(hp.getHandle(), src, root, dst)));
                }
                m.put("privateState", priv);
            }
            out.add(m);
        }
        return out;
    }

    /** Describes a stream handle; copies the file it names (if any) into dst. */
    private static Map<String, Object> stream(StreamStateHandle h, Path src, Path root, Path dst) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        if (h == null) {
            return m;
        }
        m.put("type", h.getClass().getSimpleName());
        m.put("size", h.getStateSize());
        if (h instanceof ByteStreamStateHandle b) {
            m.put("inlineBytes", b.getData().length);
        } else if (h instanceof RelativeFileStateHandle r) {
            m.put("relativePath", r.getRelativePath());
            m.put("copied", copy(src.resolve(r.getRelativePath()), dst.resolve(r.getRelativePath())));
        } else if (h instanceof FileStateHandle f) {
            Path p = Path.of(f.getFilePath().toUri().getPath());
            String rel = root.relativize(p).toString();
            m.put("path", rel);
            m.put("copied", copy(p, dst.resolve("files").resolve(rel)));
        }
        return m;
    }

    /** Test data stays small: a state file beside _metadata is copied only up to 4 KiB. */
    private static boolean copy(Path from, Path to) throws IOException {
        if (Files.size(from) > 4096) {
            return false;
        }
        Files.createDirectories(to.getParent());
        Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
        return true;
    }

    /** Keyed value, list and map state; records what it holds at each snapshot. */
    static final class KeyedZoo extends KeyedProcessFunction<String, Rec, Rec> implements CheckpointedFunction {
        private transient ValueState<Long> count;
        private transient ListState<Long> seen;
        private transient MapState<String, Long> firstSeen;
        private transient Map<String, Map<String, Object>> shadow;
        private transient String task;

        @Override
        public void open(OpenContext ctx) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            seen = getRuntimeContext().getListState(new ListStateDescriptor<>("seen", Types.LONG));
            firstSeen = getRuntimeContext().getMapState(new MapStateDescriptor<>("firstSeen", Types.STRING, Types.LONG));
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) {
            shadow = new TreeMap<>();
            task = "keyed#" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        }

        @Override
        public void processElement(Rec r, Context ctx, Collector<Rec> out) throws Exception {
            Long c = count.value();
            long n = (c == null ? 0 : c) + 1;
            count.update(n);
            seen.add(r.ts);
            String uk = "partition-of-" + r.key;
            if (!firstSeen.contains(uk)) {
                firstSeen.put(uk, r.ts);
            }
            Map<String, Object> s = shadow.computeIfAbsent(r.key, k -> new LinkedHashMap<>());
            s.put("count", n);
            @SuppressWarnings("unchecked")
            List<Long> l = (List<Long>) s.computeIfAbsent("seen", k -> new ArrayList<Long>());
            l.add(r.ts);
            s.putIfAbsent("firstSeen", new TreeMap<>(Map.of(uk, r.ts)));
            out.collect(new Rec(r.key, n, "", r.ts));
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) {
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("event", "snapshot");
            e.put("task", task);
            e.put("checkpoint", ctx.getCheckpointId());
            e.put("state", Map.of("keyed", new TreeMap<>(shadow)));
            Trace.event(e);
        }
    }

    /** Operator ListState in both modes: "recent" (split-distribute) and "tallies" (union). */
    static final class OperatorZoo extends RichMapFunction<Rec, Rec> implements CheckpointedFunction {
        private transient ListState<String> recent;
        private transient ListState<String> tallies;
        private transient List<String> last;
        private transient long seen;
        private transient int index;

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            recent = ctx.getOperatorStateStore().getListState(new ListStateDescriptor<>("recent", Types.STRING));
            tallies = ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("tallies", Types.STRING));
            index = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
            last = new ArrayList<>();
        }

        @Override
        public Rec map(Rec r) {
            seen++;
            last.add(r.key);
            if (last.size() > 3) {
                last.remove(0);
            }
            return r;
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            recent.update(new ArrayList<>(last));
            String tally = "{\"subtask\":" + index + ",\"count\":" + seen + "}";
            tallies.update(List.of(tally));
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("event", "snapshot");
            e.put("task", "operator#" + index);
            e.put("checkpoint", ctx.getCheckpointId());
            e.put("state", Map.of("recent", new ArrayList<>(last), "tallies", List.of(tally)));
            Trace.event(e);
        }
    }
}
