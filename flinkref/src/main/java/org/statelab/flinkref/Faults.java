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
        /** throw, stall-checkpoint or tm-lost. */
        public String kind;
        /** "operator#subtask" the fault is attached to. */
        public String task;
        /** throw / tm-lost: fire when the task has processed this many records in the phase. */
        public long afterRecords;
        /** stall-checkpoint: the checkpoint id whose synchronous snapshot stalls. */
        public long checkpoint;
        /** stall-checkpoint: how long it stalls. */
        public long millis;
        /** tm-lost: the MiniCluster index of the TaskManager to terminate. */
        public int taskManager;

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

    static void set(List<Fault> faults) {
        active.clear();
        active.addAll(faults);
    }

    /** Counts a record processed by task and throws if a throw fault is due. */
    static void record(String task) {
        long n = Trace.processed(task);
        for (Fault f : active) {
            if ("throw".equals(f.kind) && task.equals(f.task) && n >= f.afterRecords
                    && f.fired.compareAndSet(false, true)) {
                throw new InjectedFailure(
                        "StateLab fault: " + task + " fails after its record " + n);
            }
        }
    }

    /** Stalls the synchronous part of a snapshot if a stall-checkpoint fault names it. */
    static void snapshot(String task, long checkpointId) {
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
