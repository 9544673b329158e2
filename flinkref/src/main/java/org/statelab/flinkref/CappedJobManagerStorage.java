package org.statelab.flinkref;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.runtime.state.CheckpointStorageFactory;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;

/**
 * JobManager checkpoint storage with a cap other than its 5 MiB default. Flink sets the cap only through
 * {@code new JobManagerCheckpointStorage(maxStateSize)}; no configuration option reaches it, so the runner names
 * this factory as the checkpoint storage ({@code CheckpointStorageLoader} loads a factory by its class name) and
 * passes the cap (StateLab's {@code checkpointing.maxStateBytes}) in {@link #MAX_STATE_SIZE}.
 */
public final class CappedJobManagerStorage implements CheckpointStorageFactory<JobManagerCheckpointStorage> {
    /** The cap in bytes per state stream, as {@code MemCheckpointStreamFactory} checks it. */
    static final ConfigOption<Integer> MAX_STATE_SIZE = ConfigOptions.key("statelab.jobmanager-storage.max-state-size")
            .intType()
            .defaultValue(JobManagerCheckpointStorage.DEFAULT_MAX_STATE_SIZE);

    @Override
    public JobManagerCheckpointStorage createFromConfig(ReadableConfig config, ClassLoader classLoader) {
        return new JobManagerCheckpointStorage(config.get(MAX_STATE_SIZE)).configure(config, classLoader);
    }
}
