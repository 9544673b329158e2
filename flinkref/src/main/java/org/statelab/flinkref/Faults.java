package org.statelab.flinkref;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The faults of a phase, injected at the same points StateLab injects them. Operators call {@link #record}
 * for every record they process and {@link #snapshot} when they snapshot state; the runner itself
 * terminates TaskManagers. Every fault fires at most once per scenario, as StateLab's commands do.
 */
public final class Faults {
    private Faults() {}

    /** One fault. */
    public static final class Fault {
        /**
         * throw, stall-checkpoint, tm-lost, break-latest-checkpoint, corrupt-pending-transactions, slow or
         * skip-checkpoint (a source subtask that never emits checkpoint n's barrier; see
         * PartitionSource.InducedReader).
         */
        public String kind;
        /** "operator#subtask" the fault is attached to. */
        public String task;
        /** throw / tm-lost: fire when the task has processed this many records in the phase. */
        public long afterRecords;
        /**
         * stall-checkpoint: the checkpoint id whose synchronous snapshot stalls; skip-checkpoint: the checkpoint the
         * source subtask skips. 0: the first checkpoint a checkpoint-while-pending step triggers (armStep).
         */
        public long checkpoint;
        /** stall-checkpoint: how long it stalls. */
        public long millis;
        /** tm-lost: the MiniCluster index of the TaskManager to terminate. */
        public int taskManager;
        /**
         * throw: fire only while the job is RESTARTING (a region waits for its restart delay) and has been for
         * at least this long (-1: whenever the records are reached). A source checks it on every poll, so it
         * fires also when the source has nothing to read.
         */
        public long whileRestartingMillis = -1;
        /**
         * throw: fire only once a checkpoint completed unaligned with in-flight records persisted as channel state
         * (the runner reads Flink's checkpoint statistics and sets {@link #channelStateCheckpoint}).
         */
        public boolean afterChannelState;
        /** throw / tm-lost: fire only once this many checkpoints (not savepoints) completed (the runner counts them). */
        public long afterCompleted;
        /**
         * throw: fire on a poll of the source task (a record or not) once the subtasks of its operator have read
         * afterRecords records together and afterCompleted more checkpoints completed after that, so it also fires
         * after the sources have read all their input, and the checkpoint before the failure holds what they read.
         */
        public boolean onPoll;
        /** onPoll: the checkpoints completed when the task had read afterRecords (-1 before). */
        volatile long completedAtRecords = -1;

        final AtomicBoolean fired = new AtomicBoolean();
        /** stall-checkpoint: the stall is over (slept its time, or interrupted when the task was cancelled). */
        final AtomicBoolean ended = new AtomicBoolean();

        /** Whether the fault has done all it does: fired, and a stall has ended. */
        boolean done() {
            return fired.get() && (!"stall-checkpoint".equals(kind) || ended.get());
        }
    }

    /** Thrown by a subtask that was told to fail: the failure StateLab's crash-subtask injects. */
    public static final class InjectedFailure extends RuntimeException {
        InjectedFailure(String msg) {
            super(msg);
        }
    }

    static final List<Fault> active = new CopyOnWriteArrayList<>();

    /** The running job's checkpoint directory (its chk-N directories), for break-latest-checkpoint. */
    static volatile java.io.File checkpointDir;

    /** The checkpoint each task last snapshotted. */
    static final java.util.Map<String, Long> lastSnapshot = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * The first completed unaligned checkpoint whose statistics show persisted in-flight data
     * (AbstractCheckpointStats.getPersistedData() > 0), as the runner found it; 0 before.
     */
    static volatile long channelStateCheckpoint;

    /** How many checkpoints (not savepoints) completed, as the runner last read Flink's statistics. */
    static volatile long completedCheckpoints;

    /** When the runner's status polls saw the job enter RESTARTING (System.nanoTime), or 0 when it is not. */
    static volatile long restartingSince;

    static void set(List<Fault> faults) {
        active.clear();
        active.addAll(faults);
        restartingSince = 0;
        channelStateCheckpoint = 0;
        completedCheckpoints = 0;
        lastSnapshot.clear();
        PartitionSource.triggered.clear();
    }

    /** Whether a fault's restarting condition holds (always, for a fault without one). */
    private static boolean restartingLongEnough(Fault f) {
        if (f.whileRestartingMillis < 0) {
            return true;
        }
        long since = restartingSince;
        return since != 0 && (System.nanoTime() - since) / 1_000_000 >= f.whileRestartingMillis;
    }

    /**
     * Called by a source on every poll, a record or not: throws if a throw fault that waits for the job to be
     * RESTARTING names task and is due.
     */
    static void poll(String task) {
        for (Fault f : active) {
            if ("break-latest-checkpoint".equals(f.kind) && task.equals(f.task)) {
                breakLatest(f, task);
            }
            if ("corrupt-pending-transactions".equals(f.kind) && task.equals(f.task)) {
                corruptPending(f, task);
            }
            if ("throw".equals(f.kind) && f.onPoll && task.equals(f.task) && f.completedAtRecords < 0
                    && Trace.processedByOperator(task.substring(0, task.lastIndexOf('#'))) >= f.afterRecords) {
                f.completedAtRecords = completedCheckpoints;
            }
            if ("throw".equals(f.kind) && f.onPoll && task.equals(f.task) && f.completedAtRecords >= 0
                    && completedCheckpoints >= f.completedAtRecords + f.afterCompleted
                    && f.fired.compareAndSet(false, true)) {
                throw new InjectedFailure("StateLab fault: " + task + " fails once " + completedCheckpoints
                        + " checkpoint(s) completed");
            }
            if ("throw".equals(f.kind) && f.whileRestartingMillis >= 0 && task.equals(f.task)
                    && Trace.processedSoFar(task) >= f.afterRecords && restartingLongEnough(f)
                    && f.fired.compareAndSet(false, true)) {
                throw new InjectedFailure("StateLab fault: " + task + " fails while the job is RESTARTING");
            }
        }
    }

    /**
     * Counts a record processed by task and throws if a throw fault is due. A slow fault naming task makes it
     * take millis per record (a slow sink: what is sent to it waits in the network buffers, backpressure).
     */
    static void record(String task) {
        long n = Trace.processed(task);
        for (Fault f : active) {
            if ("slow".equals(f.kind) && task.equals(f.task)) {
                f.fired.set(true);
                try {
                    Thread.sleep(f.millis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            if ("throw".equals(f.kind) && !f.onPoll && task.equals(f.task) && n >= f.afterRecords && restartingLongEnough(f)
                    && (!f.afterChannelState || channelStateCheckpoint > 0)
                    && completedCheckpoints >= f.afterCompleted
                    && f.fired.compareAndSet(false, true)) {
                throw new InjectedFailure(
                        "StateLab fault: " + task + " fails after its record " + n
                                + (f.afterChannelState ? " (checkpoint " + channelStateCheckpoint
                                        + " completed with channel state)" : ""));
            }
        }
    }

    /**
     * The id of the latest completed checkpoint in dir (chk-N with its _metadata) once at least atLeast completed
     * and task snapshotted it last, with f marked fired; -1 (and f left as it was) otherwise. The damaging faults
     * run in the task's thread, which also snapshots it, so no newer checkpoint can complete after they act.
     */
    private static long claimLatest(Fault f, String task, java.io.File dir, int atLeast) {
        if (dir == null || f.fired.get()) {
            return -1;
        }
        java.io.File[] chks = dir.listFiles((d, n) -> n.startsWith("chk-") && new java.io.File(d, n + "/_metadata").isFile());
        if (chks == null || chks.length < atLeast) {
            return -1;
        }
        long latest = -1;
        for (java.io.File c : chks) {
            latest = Math.max(latest, Long.parseLong(c.getName().substring("chk-".length())));
        }
        Long snap = lastSnapshot.get(task);
        if (snap == null || snap != latest || !f.fired.compareAndSet(false, true)) {
            return -1;
        }
        return latest;
    }

    /**
     * break-latest-checkpoint: once at least two checkpoints completed (chk-N with its _metadata) and the latest
     * is the last one task snapshotted, deletes that checkpoint's state files and fails task. It runs in the
     * task's thread, which also snapshots it, so task has acknowledged no newer checkpoint: none can complete
     * after the deletion, and the failover restores the broken one (the one before it stays intact).
     */
    private static void breakLatest(Fault f, String task) {
        java.io.File dir = checkpointDir;
        long latest = claimLatest(f, task, dir, 2);
        if (latest < 0) {
            return;
        }
        int deleted = 0;
        java.io.File[] files = new java.io.File(dir, "chk-" + latest).listFiles();
        for (java.io.File file : files == null ? new java.io.File[0] : files) {
            if (file.isFile() && !file.getName().equals("_metadata") && file.delete()) {
                deleted++;
            }
        }
        f.checkpoint = latest;
        throw new InjectedFailure("StateLab fault: " + task + " fails after deleting the " + deleted
                + " state file(s) of checkpoint " + latest);
    }

    /**
     * corrupt-pending-transactions: once a checkpoint completed (chk-N with its _metadata) and the latest is the
     * last one task snapshotted, cuts every operator-state file of that checkpoint holding a "pending-transactions"
     * element off at its first element (what Flink's own Checkpoints.loadCheckpointMetadata says the handles
     * and offsets are), so that element does not decode (a short write), and fails task. Like break-latest-checkpoint
     * it runs in the task's thread, so no newer checkpoint can complete after it.
     */
    private static void corruptPending(Fault f, String task) {
        java.io.File dir = checkpointDir;
        long latest = claimLatest(f, task, dir, 1);
        if (latest < 0) {
            return;
        }
        java.io.File chk = new java.io.File(dir, "chk-" + latest);
        int cut = 0;
        try (java.io.DataInputStream in = new java.io.DataInputStream(
                new java.io.FileInputStream(new java.io.File(chk, "_metadata")))) {
            org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata md =
                    org.apache.flink.runtime.checkpoint.Checkpoints.loadCheckpointMetadata(
                            in, Faults.class.getClassLoader(), chk.toString());
            for (org.apache.flink.runtime.checkpoint.OperatorState os : md.getOperatorStates()) {
                for (org.apache.flink.runtime.checkpoint.OperatorSubtaskState ss : os.getStates()) {
                    for (org.apache.flink.runtime.state.OperatorStateHandle h : ss.getManagedOperatorState()) {
                        var meta = h.getStateNameToPartitionOffsets().get("pending-transactions");
                        if (meta == null || meta.getOffsets().length == 0
                                || !(h.getDelegateStateHandle() instanceof org.apache.flink.runtime.state.filesystem.FileStateHandle fh)) {
                            continue;
                        }
                        try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(
                                new java.io.File(fh.getFilePath().toUri()), "rw")) {
                            raf.setLength(meta.getOffsets()[0]);
                            cut++;
                        }
                    }
                }
            }
        } catch (java.io.IOException e) {
            throw new IllegalStateException("corrupt-pending-transactions: " + e, e);
        }
        f.checkpoint = latest;
        throw new InjectedFailure("StateLab fault: " + task + " fails after cutting off the pending transactions of "
                + cut + " sink subtask(s) in checkpoint " + latest);
    }

    /**
     * Gives each skip-checkpoint and stall-checkpoint fault with no checkpoint id (0) the checkpoint id, the next
     * one a checkpoint-while-pending step triggers (Flink may have taken periodic checkpoints of its own before);
     * whether there was one.
     */
    static boolean armStep(long checkpointId) {
        boolean armed = false;
        for (Fault f : active) {
            if (("skip-checkpoint".equals(f.kind) || "stall-checkpoint".equals(f.kind)) && f.checkpoint == 0) {
                f.checkpoint = checkpointId;
                armed = true;
            }
        }
        return armed;
    }

    /** Whether a skip-checkpoint fault names a subtask of source operator id (its readers are then induced). */
    static boolean skipsCheckpoints(String id) {
        return active.stream().anyMatch(f -> "skip-checkpoint".equals(f.kind) && f.task.startsWith(id + "#"));
    }

    /**
     * Whether task skips checkpoint id (a skip-checkpoint fault names both): its reader induces the next one
     * instead. Noted in the trace as a "skip-checkpoint" event.
     */
    static boolean skipCheckpoint(String task, long checkpointId) {
        for (Fault f : active) {
            if ("skip-checkpoint".equals(f.kind) && task.equals(f.task) && f.checkpoint > 0 && checkpointId == f.checkpoint
                    && f.fired.compareAndSet(false, true)) {
                java.util.Map<String, Object> e = new java.util.LinkedHashMap<>();
                e.put("event", "skip-checkpoint");
                e.put("task", task);
                e.put("checkpoint", checkpointId);
                Trace.event(e);
                return true;
            }
        }
        return false;
    }

    /** Stalls the synchronous part of a snapshot if a stall-checkpoint fault names it. */
    static void snapshot(String task, long checkpointId) {
        lastSnapshot.put(task, checkpointId);
        for (Fault f : active) {
            if ("stall-checkpoint".equals(f.kind) && task.equals(f.task) && checkpointId == f.checkpoint
                    && f.fired.compareAndSet(false, true)) {
                try {
                    Thread.sleep(f.millis);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                } finally {
                    f.ended.set(true);
                }
            }
        }
    }
}
