// Package savepoint reads Apache Flink's checkpoint and savepoint metadata
// (the _metadata file) and answers, from it alone, what a restore with another
// parallelism would read. It imports only the standard library and rescale,
// and sits beside attach at the bottom of the package order.
//
// The format is Flink's, read from its serializers (flink-runtime,
// org.apache.flink.runtime.checkpoint.metadata), and the names are Flink's:
//
//   - Read follows Checkpoints.loadCheckpointMetadata: the magic number
//     0x4960672d, the format version, then MetadataV3Serializer (version 3),
//     MetadataV4Serializer (4: CheckpointProperties appended with Java
//     serialization), MetadataV5Serializer (5: operator name and uid),
//     MetadataV6Serializer (6: ChannelStateHandleSerializerV2, merged channel
//     handles) and MetadataV7Serializer (7: a subtask's regional-checkpoint
//     reference id). Versions 1 and 2 (Flink 1.10 and older) and unknown
//     versions are refused with ErrVersion.
//   - Handles are MetadataV2V3SerializerBase's: ByteStreamStateHandle (inline),
//     FileStateHandle, RelativeFileStateHandle, KeyGroupsStateHandle (with
//     KeyGroupRangeOffsets), KeyGroupsSavepointStateHandle,
//     IncrementalRemoteKeyedStateHandle (shared and private files),
//     OperatorStreamStateHandle (OperatorStateHandle.StateMetaInfo: mode and
//     element offsets per state name), the changelog handles, and file
//     merging's SegmentFileStateHandle and FileMergingOperatorStreamStateHandle.
//     An unknown type code is ErrHandleKind, naming the code and its offset.
//   - Plan is StateAssignmentOperation's view: keyed state by key-group range
//     intersection (rescale.KeyGroupRangeForOperator), operator state by
//     rescale.Repartition (RoundRobinOperatorStateRepartitioner), and Flink's
//     refusal of a parallelism above the state's max parallelism (ErrAboveMax).
//   - DecodeOperatorState decodes operator-state values when they are inline
//     and their serializer is a simple one (String, Long, Int, Boolean, Double,
//     byte[]), and a KafkaSource's splits inside its reader state.
//
// Contract for callers:
//
//  1. Read the whole file into memory yourself, with your own size limit;
//     Read never allocates more than a small multiple of the input (every
//     length prefix is checked against the bytes that remain) and never panics.
//  2. Read's error says what was wrong; errors.Is tells the kind:
//     ErrNotMetadata, ErrVersion, ErrHandleKind, ErrTruncated, ErrCorrupt.
//  3. Summarise with NewReport (the JSON the CLI prints and the page shows);
//     plan a rescale with FindOperator then NewPlan.
package savepoint
