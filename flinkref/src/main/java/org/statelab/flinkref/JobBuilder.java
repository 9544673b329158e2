package org.statelab.flinkref;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.AggregateFunction;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * Translates a StateLab job spec (engine.JobSpec as JSON) into Flink's DataStream API: one Flink operator per
 * StateLab operator, named by its StateLab id and uid'd by its uid (its id when it has none), chained as the spec's chaining says
 * (on when it is missing, as in Flink and StateLab; a spec with chaining false makes each operator its own JobVertex); each edge's
 * partitioner as forward(), rebalance(), keyBy(key) or broadcast().
 */
final class JobBuilder {
    private JobBuilder() {}

    static final TypeInformation<Rec> REC = TypeInformation.of(Rec.class);

    static void build(StreamExecutionEnvironment env, JsonNode spec, String inputFile, Map<String, Integer> parallelism) {
        build(env, spec, inputFile, parallelism, null, false);
    }

    /**
     * outputDir: when set, each sink also appends its committed records to outputDir/SINK.jsonl. restoring: the
     * job restores from a savepoint, so max parallelism is not set again: Flink takes it from the savepoint, as
     * it is fixed when a job first runs (StateLab's rule too). An operator's "configuredMaxParallelism" (a
     * changed job's, written for Flink only) is set on a restore too: a job that configures a max parallelism
     * other than its savepoint's (StateLab's upgrade set-max-parallelism).
     */
    static void build(StreamExecutionEnvironment env, JsonNode spec, String inputFile, Map<String, Integer> parallelism,
            String outputDir, boolean restoring) {
        // StateLab's chaining setting (engine/chain.go): on unless the spec says chaining: false, as Flink's
        // pipeline.operator-chaining.enabled defaults to true and StateLab's job specs do; on, Flink chains where
        // StreamingJobGraphGenerator.isChainable allows, and an operator's chain: start-new / disable is
        // startNewChain() / disableChaining(); off, each operator is its own JobVertex. The conformance harness
        // and export-flink write the field into every spec, so neither side relies on this default.
        if (!spec.path("chaining").asBoolean(true)) {
            env.disableOperatorChaining();
        }
        Map<String, JsonNode> ops = new HashMap<>();
        List<String> order = new ArrayList<>();
        for (JsonNode o : spec.path("operators")) {
            ops.put(o.path("id").asText(), o);
            order.add(o.path("id").asText());
        }
        Map<String, List<JsonNode>> inputs = new HashMap<>();
        for (JsonNode e : spec.path("edges")) {
            inputs.computeIfAbsent(e.path("to").asText(), k -> new ArrayList<>()).add(e);
        }
        Map<String, DataStream<Rec>> built = new HashMap<>();
        // Operators in an order where every input is built first.
        while (built.size() < ops.size()) {
            boolean progress = false;
            for (String id : order) {
                if (built.containsKey(id)) {
                    continue;
                }
                List<JsonNode> in = inputs.getOrDefault(id, List.of());
                boolean ready = in.stream().allMatch(e -> built.containsKey(e.path("from").asText()));
                if (!ready) {
                    continue;
                }
                built.put(id, buildOp(env, ops.get(id), in, built, ops, inputFile, parallelism, outputDir, restoring));
                progress = true;
            }
            if (!progress) {
                break;
            }
        }
    }

    static int parallelismOf(JsonNode op, Map<String, Integer> override) {
        String id = op.path("id").asText();
        if (override != null && override.containsKey(id)) {
            return override.get(id);
        }
        int p = op.path("parallelism").asInt(0);
        return p <= 0 ? 1 : p;
    }

    private static DataStream<Rec> partitioned(JsonNode edge, DataStream<Rec> from) {
        String part = edge.path("partitioner").asText("");
        return switch (part) {
            case "forward" -> from.forward();
            case "rebalance" -> from.rebalance();
            case "broadcast" -> from.broadcast();
            case "hash" -> from; // keyBy is applied by the keyed operator itself
            default -> from; // Flink picks forward for equal parallelism, rebalance otherwise, as StateLab does
        };
    }

    private static DataStream<Rec> buildOp(StreamExecutionEnvironment env, JsonNode op, List<JsonNode> in,
            Map<String, DataStream<Rec>> built, Map<String, JsonNode> ops, String inputFile,
            Map<String, Integer> parallelism, String outputDir, boolean restoring) {
        String id = op.path("id").asText();
        String kind = op.path("kind").asText();
        JsonNode opts = op.path("options");
        int p = parallelismOf(op, parallelism);
        int maxP = op.path("maxParallelism").asInt(0);
        DataStream<Rec> input = null;
        DataStream<Rec> broadcastIn = null;
        for (JsonNode e : in) {
            DataStream<Rec> s = built.get(e.path("from").asText());
            if ("broadcast-filter".equals(kind) && "broadcast".equals(e.path("partitioner").asText())) {
                broadcastIn = s;
                continue;
            }
            DataStream<Rec> ps = partitioned(e, s);
            input = input == null ? ps : input.union(ps);
        }
        SingleOutputStreamOperator<?> out;
        switch (kind) {
            case "source" -> {
                int partitions = opts.path("partitions").asInt(p);
                out = env.fromSource(new PartitionSource(id, inputFile, partitions, procTimeLinger(ops)),
                        WatermarkStrategy.<Rec>forMonotonousTimestamps().withTimestampAssigner((r, t) -> r.ts), id,
                        REC);
            }
            case "tokenizer" -> out = input.flatMap(new Ops.Tokenizer(id), REC);
            case "map" -> out = input.map(new Ops.MapFn(id, opts.path("fn").asText("identity")), REC);
            case "filter" -> {
                List<String> ex = new ArrayList<>();
                opts.path("exclude").forEach(x -> ex.add(x.asText()));
                out = input.flatMap(new Ops.FilterFn(id, ex, opts.path("minLength").asInt(0)), REC);
            }
            case "count", "sum" -> out = input.keyBy(r -> r.key, Types.STRING)
                    .transform(id, REC, new Ops.KeyedAggregate(id, "count".equals(kind), ttlConfig(opts)));
            case "window-count" -> {
                long size = Specs.millis(opts.path("size"), 15000);
                out = input.keyBy(r -> r.key, Types.STRING)
                        .window(TumblingEventTimeWindows.of(Duration.ofMillis(size)))
                        .aggregate(new CountAgg(), new WindowLabel(size), Types.LONG, Types.LONG, REC);
            }
            case "tally" -> out = input.map(new Ops.Tally(id), REC);
            case "alerts" -> {
                long timeout = Specs.millis(opts.path("timeout"), 10000);
                String domain = opts.path("timeDomain").asText("event");
                out = switch (domain) {
                    // KeyedStream.process's own operator, which also lists its restored timers (Ops.AlertsOperator)
                    case "event" -> input.keyBy(r -> r.key, Types.STRING)
                            .transform(id, REC, new Ops.AlertsOperator(id, new Ops.Alerts(id, timeout, ttlConfig(opts))));
                    // The sources linger (procTimeLinger) so that the pending timers fire before the input ends.
                    case "processing" -> input.keyBy(r -> r.key, Types.STRING)
                            .process(new Ops.ProcAlerts(id, timeout, ttlConfig(opts)), REC);
                    default -> throw new IllegalArgumentException("operator " + id + ": alerts with timeDomain "
                            + domain + " is not translated (want event or processing)");
                };
            }
            case "broadcast-filter" -> out = input.connect(broadcastIn.broadcast(Ops.BroadcastFilter.RULES))
                    .process(new Ops.BroadcastFilter(id), REC);
            case "sink" -> {
                boolean eo = !"at-least-once".equals(opts.path("semantics").asText("exactly-once"));
                String file = outputDir == null ? null : new java.io.File(outputDir, id + ".jsonl").getPath();
                out = input.transform(id, Types.VOID,
                        eo ? new Ops.TwoPhaseSink(id, file) : new Ops.AtLeastOnceSink(id, file));
            }
            default -> throw new IllegalArgumentException("operator " + id + ": kind " + kind + " is not translated");
        }
        out.name(id).uid(op.path("uid").asText(id)).setParallelism(p); // the spec's uid, else its id
        if (out.getTransformation() instanceof org.apache.flink.streaming.api.transformations.OneInputTransformation<?, ?> t
                && !"window-count".equals(kind)) {
            // count, sum and the sinks are AbstractStreamOperators, whose default strategy (HEAD) starts a new chain;
            // chainable as Flink's own one-input operators (StreamMap, KeyedProcessOperator) are, as StateLab chains.
            t.setChainingStrategy(org.apache.flink.streaming.api.operators.ChainingStrategy.ALWAYS);
        }
        switch (op.path("chain").asText("")) {
            case "start-new" -> out.startNewChain();
            case "disable" -> out.disableChaining();
            default -> {}
        }
        int configured = op.path("configuredMaxParallelism").asInt(0);
        if (configured > 0) {
            out.setMaxParallelism(configured);
        } else if (maxP > 0 && !restoring) {
            out.setMaxParallelism(maxP);
        }
        @SuppressWarnings("unchecked")
        DataStream<Rec> r = "sink".equals(kind) ? null : (DataStream<Rec>) out;
        return r; // a sink has no output stream: null marks it built
    }

    /**
     * How long a source waits, after reading its input to the end, before it ends it: 0 unless an alerts operator
     * times out on processing time, then twice its longest timeout plus 5 s. Flink drops processing-time timers
     * still pending when a bounded input ends (StreamOperatorWrapper quiesces the ProcessingTimeService), and
     * flinkref reads the input as fast as it can, so without the wait every alert still pending would be lost;
     * StateLab's engine fires them (its clock moves on when nothing else can happen).
     */
    static long procTimeLinger(Map<String, JsonNode> ops) {
        long max = 0;
        for (JsonNode o : ops.values()) {
            JsonNode opts = o.path("options");
            if ("alerts".equals(o.path("kind").asText()) && "processing".equals(opts.path("timeDomain").asText())) {
                max = Math.max(max, Specs.millis(opts.path("timeout"), 10000));
            }
        }
        return max == 0 ? 0 : 2 * max + 5000;
    }

    /**
     * The StateTtlConfig of a keyed operator's options (StateLab's ttl, ttlUpdateType, ttlStateVisibility,
     * ttlCleanupFullSnapshot, ttlCleanupSize), or null without "ttl".
     */
    static StateTtlConfig ttlConfig(JsonNode opts) {
        if (!opts.has("ttl")) {
            return null;
        }
        StateTtlConfig.Builder b = StateTtlConfig.newBuilder(Duration.ofMillis(Specs.millis(opts.path("ttl"), 0)));
        if ("OnReadAndWrite".equals(opts.path("ttlUpdateType").asText())) {
            b.setUpdateType(StateTtlConfig.UpdateType.OnReadAndWrite);
        }
        if ("ReturnExpiredIfNotCleanedUp".equals(opts.path("ttlStateVisibility").asText())) {
            b.setStateVisibility(StateTtlConfig.StateVisibility.ReturnExpiredIfNotCleanedUp);
        }
        if (opts.path("ttlCleanupFullSnapshot").asBoolean(false)) {
            b.cleanupFullSnapshot();
        }
        int size = opts.path("ttlCleanupSize").asInt(0);
        if (size < 0) {
            b.disableCleanupInBackground();
        } else if (size > 0) {
            b.cleanupIncrementally(size, false);
        }
        return b.build();
    }

    /** Counts a window's records (the window-count operator's MapState value). */
    static final class CountAgg implements AggregateFunction<Rec, Long, Long> {
        @Override
        public Long createAccumulator() {
            return 0L;
        }

        @Override
        public Long add(Rec r, Long acc) {
            return acc + 1;
        }

        @Override
        public Long getResult(Long acc) {
            return acc;
        }

        @Override
        public Long merge(Long a, Long b) {
            return a + b;
        }
    }

    /** Emits key, count and the window's label "[start, end)" in Go duration text, as StateLab does. */
    static final class WindowLabel extends ProcessWindowFunction<Long, Rec, String, TimeWindow> {
        private final long size;

        WindowLabel(long size) {
            this.size = size;
        }

        @Override
        public void process(String key, Context ctx, Iterable<Long> counts, Collector<Rec> out) {
            long n = counts.iterator().next();
            long start = ctx.window().getStart();
            out.collect(new Rec(key, n, "[" + Specs.goDuration(start) + ", " + Specs.goDuration(start + size) + ")",
                    start + size - 1));
        }
    }
}
