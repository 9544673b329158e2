package org.statelab.flinkref;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ExternallyInducedSourceReader;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * StateLab's partitioned source as a Flink (FLIP-27) {@link Source}: one split per partition, the split's
 * offset is the next record to read. Flink's SourceOperator keeps each reader's splits in operator ListState
 * "SourceReaderState" (split-distribute), so on a rescale the splits, with their offsets, are dealt out by
 * Flink's RoundRobinOperatorStateRepartitioner, as StateLab's "offsets" list state is.
 *
 * <p>On a fresh start the enumerator assigns partition k to reader k mod parallelism, as StateLab does.
 * (Flink's KafkaSource starts the round robin at a reader derived from the topic name's hash; StateLab's
 * rule is the same round robin starting at reader 0.)
 *
 * <p>A phase of a scenario can hold a partition back at an offset (Limits): the reader then waits there,
 * so a savepoint taken next holds exactly the records before it.
 */
public final class PartitionSource implements Source<Rec, PartitionSource.Split, PartitionSource.EnumState> {
    private static final long serialVersionUID = 1L;

    /** Per source id: the offset each partition may be read up to in the current phase. */
    static final Map<String, long[]> limits = new ConcurrentHashMap<>();

    /** Per source id: the latest checkpoint the coordinator triggered (its enumerator snapshotted it). */
    static final Map<String, Long> triggered = new ConcurrentHashMap<>();

    /** Per "source/partition": the offset read so far (next to read), across readers and attempts. */
    static final Map<String, Long> progress = new ConcurrentHashMap<>();

    private final String id;
    private final String inputFile;
    private final int partitions;
    private final long lingerMillis;

    PartitionSource(String id, String inputFile, int partitions) {
        this(id, inputFile, partitions, 0);
    }

    /**
     * lingerMillis: a reader that has read its splits to their end waits this long (wall-clock) before it ends
     * its input. A job with processing-time timers needs it: when a bounded input ends, Flink quiesces each
     * operator's ProcessingTimeService before finishing it (StreamOperatorWrapper), so timers still pending
     * then never fire. While the reader lingers the job runs as on an idle unbounded source.
     */
    PartitionSource(String id, String inputFile, int partitions, long lingerMillis) {
        this.id = id;
        this.inputFile = inputFile;
        this.partitions = partitions;
        this.lingerMillis = lingerMillis;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.BOUNDED;
    }

    @Override
    public SplitEnumerator<Split, EnumState> createEnumerator(SplitEnumeratorContext<Split> ctx) {
        List<Split> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new Split(p, 0));
        }
        return new Enumerator(id, ctx, all);
    }

    @Override
    public SplitEnumerator<Split, EnumState> restoreEnumerator(SplitEnumeratorContext<Split> ctx, EnumState st) {
        return new Enumerator(id, ctx, st.pending);
    }

    @Override
    public SimpleVersionedSerializer<Split> getSplitSerializer() {
        return new SplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<EnumState> getEnumeratorCheckpointSerializer() {
        return new EnumStateSerializer();
    }

    @Override
    public SourceReader<Rec, Split> createReader(SourceReaderContext ctx) {
        if (Faults.skipsCheckpoints(id)) {
            return new InducedReader(id, inputFile, ctx, lingerMillis);
        }
        return new Reader(id, inputFile, ctx, lingerMillis);
    }

    /** A partition and the next offset to read. */
    public static final class Split implements SourceSplit {
        final int partition;
        long offset;

        Split(int partition, long offset) {
            this.partition = partition;
            this.offset = offset;
        }

        @Override
        public String splitId() {
            return "partition-" + partition;
        }

        @Override
        public String toString() {
            return "{\"partition\":" + partition + ",\"offset\":" + offset + "}";
        }
    }

    /** The enumerator's checkpoint: splits not assigned yet. */
    public static final class EnumState {
        final List<Split> pending;

        EnumState(List<Split> pending) {
            this.pending = pending;
        }
    }

    static final class Enumerator implements SplitEnumerator<Split, EnumState> {
        private final SplitEnumeratorContext<Split> ctx;
        private final List<Split> pending;

        private final String id;

        Enumerator(String id, SplitEnumeratorContext<Split> ctx, List<Split> pending) {
            this.id = id;
            this.ctx = ctx;
            this.pending = new ArrayList<>(pending);
        }

        @Override
        public void start() {}

        @Override
        public void handleSplitRequest(int subtask, String host) {}

        @Override
        public void addSplitsBack(List<Split> splits, int subtask) {
            // A reader failed before a checkpoint recorded these splits as its own: they go back and are
            // assigned again when the restarted reader registers.
            pending.addAll(splits);
        }

        @Override
        public void addReader(int subtask) {
            int p = ctx.currentParallelism();
            List<Split> mine = new ArrayList<>();
            pending.removeIf(s -> {
                if (s.partition % p == subtask) {
                    mine.add(s);
                    return true;
                }
                return false;
            });
            mine.sort(Comparator.comparingInt(s -> s.partition));
            for (Split s : mine) {
                ctx.assignSplit(s, subtask);
            }
            ctx.signalNoMoreSplits(subtask);
        }

        @Override
        public EnumState snapshotState(long checkpointId) {
            // The coordinator snapshots the enumerator (on the JobManager) before it sends the checkpoint's trigger
            // to the source tasks: an induced reader learns here which checkpoints were triggered.
            triggered.merge(id, checkpointId, Math::max);
            return new EnumState(new ArrayList<>(pending));
        }

        @Override
        public void close() {}
    }

    static class Reader implements SourceReader<Rec, Split> {
        final String id;
        private final String inputFile;
        private final SourceReaderContext ctx;
        final String task;
        private final TreeMap<Integer, Split> splits = new TreeMap<>();
        private final Map<Integer, SourceOutput<Rec>> outputs = new LinkedHashMap<>();
        private final List<Split> restored = new ArrayList<>();
        private final java.util.Set<Integer> released = new java.util.HashSet<>();
        private List<List<Rec>> data;
        private boolean started;
        private boolean noMoreSplits;
        private int next;
        private final long lingerMillis;
        private long doneAt = -1; // when the splits were read to their end (lingering), -1 before

        Reader(String id, String inputFile, SourceReaderContext ctx, long lingerMillis) {
            this.id = id;
            this.inputFile = inputFile;
            this.ctx = ctx;
            this.task = id + "#" + ctx.getIndexOfSubtask();
            this.lingerMillis = lingerMillis;
        }

        @Override
        public void start() {
            started = true;
            data = InputStore.partitions(inputFile, id);
            Map<String, Object> e = new LinkedHashMap<>();
            e.put("event", "open");
            e.put("task", task);
            e.put("operator", id);
            e.put("subtask", ctx.getIndexOfSubtask());
            // SourceReaderContext does not tell the attempt: count this task's opens in the phase.
            e.put("attempt", Trace.opens(task));
            List<Map<String, Object>> offs = new ArrayList<>();
            for (Split s : restored) {
                offs.add(Map.of("partition", s.partition, "offset", s.offset));
            }
            // The splits Flink's SourceOperator handed this reader from its "SourceReaderState" list state
            // before the reader started: the operator state it restored.
            e.put("restoredSplits", offs);
            Trace.event(e);
        }

        @Override
        public void addSplits(List<Split> added) {
            for (Split s : added) {
                if (!started) {
                    restored.add(new Split(s.partition, s.offset));
                }
                splits.put(s.partition, s);
            }
        }

        @Override
        public void notifyNoMoreSplits() {
            noMoreSplits = true;
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Rec> out) {
            Faults.poll(task);
            long[] lim = limits.get(id);
            List<Integer> order = new ArrayList<>(splits.keySet());
            for (int i = 0; i < order.size(); i++) {
                int part = order.get((next + i) % order.size());
                Split s = splits.get(part);
                List<Rec> recs = data.get(part);
                long limit = lim == null ? recs.size() : Math.min(lim[part], recs.size());
                if (s.offset < limit) {
                    Rec r = recs.get((int) s.offset);
                    SourceOutput<Rec> o = outputs.computeIfAbsent(part, k -> out.createOutputForSplit(s.splitId()));
                    Faults.record(task);
                    o.collect(new Rec(r.key, r.value, r.text, r.ts), r.ts);
                    s.offset++;
                    progress.merge(id + "/" + part, s.offset, Math::max);
                    next = (next + i + 1) % Math.max(1, order.size());
                    return InputStatus.MORE_AVAILABLE;
                }
                if (s.offset >= recs.size() && outputs.containsKey(part) && released.add(part)) {
                    // A partition read to its end no longer holds the watermark back.
                    out.releaseOutputForSplit(s.splitId());
                }
            }
            boolean allDone = true;
            for (Split s : splits.values()) {
                if (s.offset < data.get(s.partition).size()) {
                    allDone = false;
                }
            }
            if (noMoreSplits && allDone && lim == null) {
                if (lingerMillis > 0) {
                    long now = System.currentTimeMillis();
                    if (doneAt < 0) {
                        doneAt = now;
                    }
                    if (now - doneAt < lingerMillis) {
                        return InputStatus.NOTHING_AVAILABLE;
                    }
                }
                return InputStatus.END_OF_INPUT;
            }
            return InputStatus.NOTHING_AVAILABLE;
        }

        /**
         * Whether the reader has nothing to read now: every split assigned (no more to come) and each read up
         * to the phase's limit (or its end).
         */
        boolean atRest() {
            if (!started || !noMoreSplits) {
                return false;
            }
            long[] lim = limits.get(id);
            for (Split s : splits.values()) {
                long size = data.get(s.partition).size();
                if (s.offset < (lim == null ? size : Math.min(lim[s.partition], size))) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            Faults.snapshot(task, checkpointId);
            List<Split> out = new ArrayList<>();
            for (Split s : splits.values()) {
                out.add(new Split(s.partition, s.offset));
            }
            return out;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            // Held back at a phase's limit (or waiting for splits): look again shortly.
            return CompletableFuture.runAsync(() -> {}, CompletableFuture.delayedExecutor(10, TimeUnit.MILLISECONDS));
        }

        @Override
        public void close() {}
    }

    /**
     * The reader of a source a skip-checkpoint fault names: an {@link ExternallyInducedSourceReader}, so the
     * reader, not the checkpoint coordinator's trigger, decides when its task takes a checkpoint. Flink's
     * SourceOperatorStreamTask keeps each trigger that arrives (untriggeredCheckpoints) until the reader
     * induces that id (shouldTriggerCheckpoint, asked whenever the reader has nothing available), blocking the
     * input if the reader induces an id before its trigger came; once the reader induced a checkpoint it drops
     * every older trigger it kept (cleanupOldCheckpoints) without a barrier, an acknowledgement or a decline.
     * This reader induces each checkpoint the coordinator triggered (its enumerator snapshotted it, which Flink
     * does before it sends the trigger to the tasks), in turn, whenever it is at rest (read up to the phase's
     * limits), except the one a skip-checkpoint fault names for its subtask: that task never emits that
     * checkpoint's barrier, and its next barrier is the newer checkpoint's. A fresh job's checkpoints are numbered
     * from 1; after a restore the reader learns the numbers from the checkpoints it snapshots.
     */
    static final class InducedReader extends Reader implements ExternallyInducedSourceReader<Rec, Split> {
        private long nextId = 1;

        InducedReader(String id, String inputFile, SourceReaderContext ctx, long lingerMillis) {
            super(id, inputFile, ctx, lingerMillis);
        }

        @Override
        public java.util.Optional<Long> shouldTriggerCheckpoint() {
            if (!atRest() || nextId > triggered.getOrDefault(id, 0L)) {
                return java.util.Optional.empty();
            }
            long cp = nextId;
            if (Faults.skipCheckpoint(task, cp)) {
                cp++;
            }
            nextId = cp + 1;
            return java.util.Optional.of(cp);
        }

        @Override
        public List<Split> snapshotState(long checkpointId) {
            nextId = Math.max(nextId, checkpointId + 1);
            return super.snapshotState(checkpointId);
        }
    }

    static final class SplitSerializer implements SimpleVersionedSerializer<Split> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(Split s) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream d = new DataOutputStream(b);
            d.writeInt(s.partition);
            d.writeLong(s.offset);
            d.flush();
            return b.toByteArray();
        }

        @Override
        public Split deserialize(int version, byte[] bytes) throws IOException {
            DataInputStream d = new DataInputStream(new ByteArrayInputStream(bytes));
            return new Split(d.readInt(), d.readLong());
        }
    }

    static final class EnumStateSerializer implements SimpleVersionedSerializer<EnumState> {
        @Override
        public int getVersion() {
            return 1;
        }

        @Override
        public byte[] serialize(EnumState st) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream d = new DataOutputStream(b);
            d.writeInt(st.pending.size());
            for (Split s : st.pending) {
                d.writeInt(s.partition);
                d.writeLong(s.offset);
            }
            d.flush();
            return b.toByteArray();
        }

        @Override
        public EnumState deserialize(int version, byte[] bytes) throws IOException {
            DataInputStream d = new DataInputStream(new ByteArrayInputStream(bytes));
            int n = d.readInt();
            List<Split> l = new ArrayList<>();
            for (int i = 0; i < n; i++) {
                l.add(new Split(d.readInt(), d.readLong()));
            }
            return new EnumState(l);
        }
    }
}
