// SavepointGen writes real savepoints and checkpoints with Apache Flink (the
// version on the classpath) and, beside each, flink.json: what Flink's own
// Checkpoints.loadCheckpointMetadata reads from its _metadata. The savepoint
// package's TestAgreesWithFlink compares StateLab's reader with it.
//
// Run (flinkref's Maven classpath has Flink, RocksDB and the datagen source):
//
//	cd savepoint/testdata/flinkgen
//	CP=$(cat ../../../flinkref/target/classpath.txt)
//	javac -cp "$CP" -d /tmp/spgen SavepointGen.java
//	java -Xmx1g -cp "/tmp/spgen:$CP" SavepointGen ../flink
//
// It writes into ../flink/<Flink version>/; a second argument "unaligned" writes
// only the unaligned checkpoint, "window" only the window job's snapshots,
// "broadcast" only the broadcast job's savepoint. For Flink 1.20, use flinkref's
// flink-1.20 profile classpath (target/flink-1.20/classpath.txt).
//
// The job: a rate-limited number source (SourceReaderState), a map with
// operator list state in SPLIT_DISTRIBUTE ("buffer") and UNION ("everyone")
// mode, and a keyed function with ValueState<Long>, ListState<String> and
// MapState<String, Long> under String keys; parallelism 2, max parallelism
// 128, uids and names set.
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
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.CheckpointType;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.OperatorState;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.KeyedStateHandle;
import org.apache.flink.runtime.state.OperatorStateHandle;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.SerializationFeature;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.util.Collector;

import java.io.DataInputStream;
import java.io.File;
import java.io.FileInputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

public class SavepointGen {

    public static void main(String[] args) throws Exception {
        Path out = Path.of(args.length > 0 ? args[0] : "../flink").toAbsolutePath()
                .resolve(org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        Files.createDirectories(out);
        if (args.length > 1 && args[1].equals("unaligned")) {
            unaligned(out); // only the unaligned checkpoint
            return;
        }
        if (args.length > 1 && args[1].equals("broadcast")) {
            broadcast(out);
            return;
        }
        if (args.length > 1 && args[1].equals("window")) {
            window(out, "hashmap");
            window(out, "rocksdb");
            return;
        }
        for (String backend : new String[] {"hashmap", "rocksdb"}) {
            for (boolean inline : new boolean[] {true, false}) {
                run(out, backend, inline);
            }
        }
        unaligned(out);
    }

    /**
     * An unaligned checkpoint taken under backpressure (a slow keyed function):
     * in-flight buffers are saved as channel state (input channel and result
     * subpartition handles).
     */
    static void unaligned(Path out) throws Exception {
        Path work = Files.createTempDirectory("spgen");
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, work.resolve("checkpoints").toUri().toString());
        conf.set(CheckpointingOptions.ENABLE_UNALIGNED, true);
        MiniClusterConfiguration mcc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf).setNumTaskManagers(1).setNumSlotsPerTaskManager(4).build();
        try (MiniCluster mc = new MiniCluster(mcc)) {
            mc.start();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
            env.setParallelism(2);
            env.setMaxParallelism(128);
            env.enableCheckpointing(3_600_000L);
            DataGeneratorSource<Long> src = new DataGeneratorSource<>(n -> n, Long.MAX_VALUE, RateLimiterStrategy.perSecond(20_000), Types.LONG);
            env.fromSource(src, WatermarkStrategy.noWatermarks(), "numbers").uid("numbers").name("numbers")
                    .map(new Buffering()).uid("buffering").name("buffering")
                    .keyBy(s -> s)
                    .process(new Slow()).uid("slow").name("slow")
                    .sinkTo(new DiscardingSink<>()).uid("sink").name("sink");
            JobGraph jg = env.getStreamGraph().getJobGraph();
            mc.submitJob(jg).get();
            Thread.sleep(4000);
            Path chks = work.resolve("checkpoints").resolve(jg.getJobID().toHexString());
            long cp = mc.triggerCheckpoint(jg.getJobID(), CheckpointType.FULL).get();
            save(out.resolve("hashmap-unaligned-checkpoint"), chks.resolve("chk-" + cp).toUri().toString(), "hashmap", "checkpoint");
            mc.cancelJob(jg.getJobID()).get();
        }
    }

    /**
     * A window job: keyed state in TimeWindow namespaces (the reduce's
     * "window-contents") and processing-time timers, in a canonical savepoint
     * and a full checkpoint.
     */
    static void window(Path out, String backend) throws Exception {
        Path work = Files.createTempDirectory("spgen");
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, backend);
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, work.resolve("checkpoints").toUri().toString());
        conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, false);
        MiniClusterConfiguration mcc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf).setNumTaskManagers(1).setNumSlotsPerTaskManager(4).build();
        try (MiniCluster mc = new MiniCluster(mcc)) {
            mc.start();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
            env.setParallelism(2);
            env.setMaxParallelism(128);
            env.enableCheckpointing(3_600_000L);
            DataGeneratorSource<Long> src = new DataGeneratorSource<>(n -> n, Long.MAX_VALUE, RateLimiterStrategy.perSecond(200), Types.LONG);
            env.fromSource(src, WatermarkStrategy.noWatermarks(), "numbers").uid("numbers").name("numbers")
                    .map(n -> "key-" + (n % 20)).uid("keys").name("keys")
                    .keyBy(s -> s)
                    .window(org.apache.flink.streaming.api.windowing.assigners.TumblingProcessingTimeWindows.of(java.time.Duration.ofHours(1)))
                    .reduce((a, b) -> a).uid("window").name("window")
                    .sinkTo(new DiscardingSink<>()).uid("sink").name("sink");
            JobGraph jg = env.getStreamGraph().getJobGraph();
            mc.submitJob(jg).get();
            Thread.sleep(4000);
            String p = mc.triggerSavepoint(jg.getJobID(), work.resolve("savepoints").toUri().toString(), false, SavepointFormatType.CANONICAL).get();
            save(out.resolve(backend + "-window-savepoint-canonical"), p, backend, "savepoint-canonical");
            Path chks = work.resolve("checkpoints").resolve(jg.getJobID().toHexString());
            long cp = mc.triggerCheckpoint(jg.getJobID(), CheckpointType.FULL).get();
            save(out.resolve(backend + "-window-checkpoint-full"), chks.resolve("chk-" + cp).toUri().toString(), backend, "checkpoint");
            mc.cancelJob(jg.getJobID()).get();
        }
    }

    static final MapStateDescriptor<String, Long> RULES = new MapStateDescriptor<>("rules", Types.STRING, Types.LONG);

    /**
     * Broadcast state: a slow rule stream (rule-0 … rule-2) broadcast to a
     * function that counts each rule in its BroadcastState, so every subtask
     * holds the same map.
     */
    static void broadcast(Path out) throws Exception {
        Path work = Files.createTempDirectory("spgen");
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        MiniClusterConfiguration mcc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf).setNumTaskManagers(1).setNumSlotsPerTaskManager(4).build();
        try (MiniCluster mc = new MiniCluster(mcc)) {
            mc.start();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
            env.setParallelism(2);
            env.setMaxParallelism(128);
            DataGeneratorSource<Long> nums = new DataGeneratorSource<>(n -> n, Long.MAX_VALUE, RateLimiterStrategy.perSecond(50), Types.LONG);
            DataGeneratorSource<Long> rules = new DataGeneratorSource<>(n -> n, Long.MAX_VALUE, RateLimiterStrategy.perSecond(5), Types.LONG);
            org.apache.flink.streaming.api.datastream.BroadcastStream<String> ruleStream =
                    env.fromSource(rules, WatermarkStrategy.noWatermarks(), "rules").uid("rules").name("rules").setParallelism(1)
                            .map(n -> "rule-" + (n % 3)).uid("rule-names").name("rule-names").setParallelism(1)
                            .broadcast(RULES);
            env.fromSource(nums, WatermarkStrategy.noWatermarks(), "numbers").uid("numbers").name("numbers")
                    .connect(ruleStream)
                    .process(new org.apache.flink.streaming.api.functions.co.BroadcastProcessFunction<Long, String, String>() {
                        @Override
                        public void processElement(Long n, ReadOnlyContext ctx, Collector<String> o) {}

                        @Override
                        public void processBroadcastElement(String rule, Context ctx, Collector<String> o) throws Exception {
                            Long c = ctx.getBroadcastState(RULES).get(rule);
                            ctx.getBroadcastState(RULES).put(rule, c == null ? 1 : c + 1);
                        }
                    }).uid("rules-applied").name("rules-applied")
                    .sinkTo(new DiscardingSink<>()).uid("sink").name("sink");
            JobGraph jg = env.getStreamGraph().getJobGraph();
            mc.submitJob(jg).get();
            Thread.sleep(4000);
            String p = mc.triggerSavepoint(jg.getJobID(), work.resolve("savepoints").toUri().toString(), false, SavepointFormatType.CANONICAL).get();
            save(out.resolve("hashmap-broadcast-savepoint-canonical"), p, "hashmap", "savepoint-canonical");
            mc.cancelJob(jg.getJobID()).get();
        }
    }

    /** A keyed function slow enough to back-pressure the source. */
    static class Slow extends KeyedProcessFunction<String, String, String> {
        @Override
        public void processElement(String key, Context ctx, Collector<String> out) throws Exception {
            Thread.sleep(2);
            out.collect(key);
        }
    }

    static void run(Path out, String backend, boolean inline) throws Exception {
        Path work = Files.createTempDirectory("spgen");
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, backend);
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, work.resolve("checkpoints").toUri().toString());
        conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, backend.equals("rocksdb"));
        // 0 puts every state handle in a file beside _metadata; the default inlines small state.
        conf.set(CheckpointingOptions.FS_SMALL_FILE_THRESHOLD, inline ? MemorySize.parse("20kb") : MemorySize.ZERO);
        MiniClusterConfiguration mcc = new MiniClusterConfiguration.Builder()
                .setConfiguration(conf).setNumTaskManagers(1).setNumSlotsPerTaskManager(4).build();
        try (MiniCluster mc = new MiniCluster(mcc)) {
            mc.start();
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
            env.setParallelism(2);
            env.setMaxParallelism(128);
            env.enableCheckpointing(3_600_000L);
            DataGeneratorSource<Long> src = new DataGeneratorSource<>(n -> n, Long.MAX_VALUE, RateLimiterStrategy.perSecond(200), Types.LONG);
            env.fromSource(src, WatermarkStrategy.noWatermarks(), "numbers").uid("numbers").name("numbers")
                    .map(new Buffering()).uid("buffering").name("buffering")
                    .keyBy(s -> s)
                    .process(new Counting()).uid("counting").name("counting")
                    .sinkTo(new DiscardingSink<>()).uid("sink").name("sink");
            JobGraph jg = env.getStreamGraph().getJobGraph();
            mc.submitJob(jg).get();
            Thread.sleep(4000);
            String tag = backend + (inline ? "-inline" : "-files");
            for (SavepointFormatType f : new SavepointFormatType[] {SavepointFormatType.CANONICAL, SavepointFormatType.NATIVE}) {
                String p = mc.triggerSavepoint(jg.getJobID(), work.resolve("savepoints").toUri().toString(), false, f).get();
                save(out.resolve(tag + "-savepoint-" + f.name().toLowerCase()), p, backend, "savepoint-" + f.name().toLowerCase());
            }
            Path chks = work.resolve("checkpoints").resolve(jg.getJobID().toHexString());
            long cp = mc.triggerCheckpoint(jg.getJobID(), CheckpointType.FULL).get();
            save(out.resolve(tag + "-checkpoint-full"), chks.resolve("chk-" + cp).toUri().toString(), backend, "checkpoint");
            if (backend.equals("rocksdb")) {
                long inc = mc.triggerCheckpoint(jg.getJobID(), CheckpointType.INCREMENTAL).get();
                save(out.resolve(tag + "-checkpoint-incremental"), chks.resolve("chk-" + inc).toUri().toString(), backend, "checkpoint");
            }
            mc.cancelJob(jg.getJobID()).get();
        }
    }

    /** Copies the snapshot directory's _metadata (and, for full snapshots, its state files) and writes flink.json. */
    static void save(Path dest, String pointer, String backend, String snapshot) throws Exception {
        Path dir = Path.of(new URI(pointer.endsWith("/") ? pointer : pointer + "/"));
        if (!Files.exists(dir.resolve("_metadata"))) {
            dir = dir.getParent();
        }
        Files.createDirectories(dest);
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                // RocksDB's own files (native savepoints, incremental checkpoints) are SSTs StateLab does not read.
                boolean sst = backend.equals("rocksdb") && !snapshot.equals("savepoint-canonical");
                if (Files.isRegularFile(f) && (f.getFileName().toString().equals("_metadata") || !sst)) {
                    Files.copy(f, dest.resolve(f.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
        CheckpointMetadata md;
        try (DataInputStream in = new DataInputStream(new FileInputStream(dir.resolve("_metadata").toFile()))) {
            md = Checkpoints.loadCheckpointMetadata(in, SavepointGen.class.getClassLoader(), dir.toUri().toString());
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("flinkVersion", org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        doc.put("backend", backend);
        doc.put("snapshot", snapshot);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("checkpointId", md.getCheckpointId());
        m.put("masterStates", md.getMasterStates().size());
        if (md.getCheckpointProperties() != null) {
            Map<String, Object> props = new LinkedHashMap<>();
            props.put("savepoint", md.getCheckpointProperties().isSavepoint());
            if (md.getCheckpointProperties().getCheckpointType() instanceof org.apache.flink.runtime.checkpoint.SavepointType) {
                props.put("formatType", ((org.apache.flink.runtime.checkpoint.SavepointType) md.getCheckpointProperties().getCheckpointType()).getFormatType().name());
            }
            m.put("properties", props);
        }
        List<Object> ops = new ArrayList<>();
        for (OperatorState os : md.getOperatorStates()) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("id", os.getOperatorID().toHexString());
            // Operator name and uid are saved from metadata version 5 (Flink 2.0, FLIP-474).
            o.put("name", optional(os, "getOperatorName"));
            o.put("uid", optional(os, "getOperatorUid"));
            o.put("parallelism", os.getParallelism());
            o.put("maxParallelism", os.getMaxParallelism());
            o.put("coordinatorStateSize", os.getCoordinatorState() == null ? 0 : os.getCoordinatorState().getStateSize());
            o.put("fullyFinished", os.isFullyFinished());
            List<Object> subs = new ArrayList<>();
            for (Map.Entry<Integer, OperatorSubtaskState> e : os.getSubtaskStates().entrySet()) {
                Map<String, Object> s = new LinkedHashMap<>();
                s.put("index", e.getKey());
                s.put("finished", e.getValue().isFinished());
                List<Object> opStates = new ArrayList<>();
                for (OperatorStateHandle h : e.getValue().getManagedOperatorState()) {
                    for (Map.Entry<String, OperatorStateHandle.StateMetaInfo> n : h.getStateNameToPartitionOffsets().entrySet()) {
                        Map<String, Object> ns = new LinkedHashMap<>();
                        ns.put("name", n.getKey());
                        ns.put("mode", n.getValue().getDistributionMode().name());
                        ns.put("offsets", n.getValue().getOffsets());
                        opStates.add(ns);
                    }
                }
                s.put("managedOperatorState", opStates);
                List<Object> keyed = new ArrayList<>();
                for (KeyedStateHandle k : e.getValue().getManagedKeyedState()) {
                    Map<String, Object> ks = new LinkedHashMap<>();
                    ks.put("class", k.getClass().getSimpleName());
                    ks.put("start", k.getKeyGroupRange().getStartKeyGroup());
                    ks.put("end", k.getKeyGroupRange().getEndKeyGroup());
                    ks.put("stateSize", k.getStateSize());
                    keyed.add(ks);
                }
                s.put("managedKeyedState", keyed);
                // In-flight data of an unaligned checkpoint.
                long channelBytes = 0;
                int inputs = 0, outputs = 0;
                for (org.apache.flink.runtime.state.StateObject c : e.getValue().getInputChannelState()) {
                    channelBytes += c.getStateSize();
                    inputs++;
                }
                for (org.apache.flink.runtime.state.StateObject c : e.getValue().getResultSubpartitionState()) {
                    channelBytes += c.getStateSize();
                    outputs++;
                }
                s.put("inputChannelHandles", inputs);
                s.put("resultSubpartitionHandles", outputs);
                s.put("channelStateSize", channelBytes);
                subs.add(s);
            }
            o.put("subtasks", subs);
            ops.add(o);
        }
        m.put("operators", ops);
        doc.put("metadata", m);
        new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(dest.resolve("flink.json").toFile(), doc);
        System.out.println("wrote " + dest);
    }

    /** Calls an Optional-returning getter that older Flink versions lack; null when absent or empty. */
    static Object optional(Object o, String getter) {
        try {
            return ((java.util.Optional<?>) o.getClass().getMethod(getter).invoke(o)).orElse(null);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    /** Operator list state in both modes: the numbers seen since the last snapshot, and a count everyone restores. */
    static class Buffering extends RichMapFunction<Long, String> implements CheckpointedFunction {
        private transient ListState<Long> buffer;
        private transient ListState<Long> everyone;
        private final List<Long> recent = new ArrayList<>();

        @Override
        public String map(Long n) {
            recent.add(n);
            if (recent.size() > 5) {
                recent.remove(0);
            }
            return "key-" + (n % 20);
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            buffer.update(new ArrayList<>(recent));
            everyone.update(List.of((long) recent.size()));
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            buffer = ctx.getOperatorStateStore().getListState(new ListStateDescriptor<>("buffer", Types.LONG));
            everyone = ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("everyone", Types.LONG));
        }
    }

    /** Keyed value, list and map state under String keys. */
    static class Counting extends KeyedProcessFunction<String, String, String> {
        private transient ValueState<Long> count;
        private transient ListState<String> seen;
        private transient MapState<String, Long> perSuffix;

        @Override
        public void open(OpenContext ctx) {
            count = getRuntimeContext().getState(new ValueStateDescriptor<>("count", Types.LONG));
            seen = getRuntimeContext().getListState(new ListStateDescriptor<>("seen", Types.STRING));
            perSuffix = getRuntimeContext().getMapState(new MapStateDescriptor<>("perSuffix", Types.STRING, Types.LONG));
        }

        @Override
        public void processElement(String key, Context ctx, Collector<String> out) throws Exception {
            long c = count.value() == null ? 1 : count.value() + 1;
            count.update(c);
            if (c <= 3) {
                seen.add(key + "#" + c);
            }
            String suffix = "s" + (c % 3);
            Long v = perSuffix.get(suffix);
            perSuffix.put(suffix, v == null ? 1 : v + 1);
            out.collect(key);
        }
    }
}
