package savepoint

import (
	"errors"
	"regexp"
	"strings"
)

// Reason says why StateLab left values undecoded, in a form a page can
// translate: a stable code, the values its sentence names, and, for a
// reason that wraps another (a key group's, the key serializer's), the
// reason inside. The English sentence of each code is in ReasonTexts; the
// /savepoint page shows the sentence of static/i18n's
// "savepoint.reason.<code>" in the page's language. NotDecoded fields keep
// the English text (the CLI prints it).
type Reason struct {
	Code  string            `json:"code"`
	Args  map[string]string `json:"args,omitempty"`
	Cause *Reason           `json:"cause,omitempty"`
}

// Reason codes. Each has an English sentence in ReasonTexts and, under
// "savepoint.reason.<code>", one in every catalogue in static/i18n.
const (
	ReasonNoStream           = "no-stream"
	ReasonOutsideMetadata    = "outside-metadata"
	ReasonNoMeta             = "no-meta"
	ReasonOperatorMetaVer    = "operator-meta-version"
	ReasonOperatorCompressed = "operator-compressed"
	ReasonElementBytesLeft   = "element-bytes-left"
	ReasonNoDecoder          = "no-decoder"
	ReasonBroadcastSerUnkn   = "broadcast-serializer-unknown"
	ReasonBroadcastBytesLeft = "broadcast-bytes-left"
	ReasonNoKeyGroupOffsets  = "no-key-group-offsets"
	ReasonKeyedMetaVer       = "keyed-meta-version"
	ReasonKeyedCompressed    = "keyed-compressed"
	ReasonKeySerializer      = "key-serializer"
	ReasonKeySerUnknown      = "key-serializer-unknown"
	ReasonSerializerFormat   = "serializer-format-unknown"
	ReasonStatesAfter        = "states-after"
	ReasonOffsetBeyond       = "offset-beyond"
	ReasonKeyGroup           = "key-group"
	ReasonValuesNotDecoded   = "values-not-decoded"
	ReasonNamespaceUnknown   = "namespace-unknown"
	ReasonTimerUnreadable    = "timer-unreadable"
	ReasonSerializersUnknown = "serializers-unknown"
	// The reader's failures: each names the offsets, sizes, counts and
	// versions it found ("what" is the field it was reading, in English;
	// the Chinese sentences say where by offset instead).
	ReasonTruncated           = "truncated"
	ReasonNegativeCount       = "negative-count"
	ReasonCountBeyond         = "count-beyond"
	ReasonNotUTF8             = "not-utf8"
	ReasonTooDeep             = "too-deep"
	ReasonTooShort            = "too-short"
	ReasonBadMagic            = "bad-magic"
	ReasonVersionOld          = "version-old"
	ReasonVersionNew          = "version-new"
	ReasonNegativeID          = "negative-checkpoint-id"
	ReasonMasterMagic         = "master-state-magic"
	ReasonMasterLength        = "master-state-length"
	ReasonMasterTrailing      = "master-state-trailing"
	ReasonParallelism         = "parallelism"
	ReasonCoordinatorKind     = "coordinator-kind"
	ReasonFinishedCoordinator = "finished-coordinator"
	ReasonSubtaskBeyond       = "subtask-beyond"
	ReasonStateScope          = "state-scope"
	ReasonKeyGroupRange       = "key-group-range"
	ReasonStreamHandleKind    = "stream-handle-kind"
	ReasonKeyedHandleKind     = "keyed-handle-kind"
	ReasonOperatorHandleKind  = "operator-handle-kind"
	ReasonChannelHandleKind   = "channel-handle-kind"
	ReasonChangelogPart       = "changelog-part"
	ReasonDistributionMode    = "distribution-mode"
	ReasonSegmentDelegate     = "segment-delegate"
	ReasonStringLength        = "string-length"
	ReasonStringBeyond        = "string-beyond"
	ReasonEmptyKey            = "empty-key"
	// Where a failure happened: {cause} is the failure.
	ReasonInMasterState = "in-master-state"
	ReasonInOperator    = "in-operator"
	ReasonInCoordinator = "in-coordinator"
	// ReasonInSubtask + "-" + the handle's part ("managed-operator-state",
	// "raw-keyed-state", "ref-checkpoint-id", …): each is a code of its own.
	ReasonInSubtask = "in-subtask"
	// A failure with no code of its own: detail is the English message (the
	// Chinese sentence says what kind of failure it was and where to read
	// the detail).
	ReasonCorrupt    = "corrupt"
	ReasonUnreadable = "unreadable"
)

// subtaskParts are the parts of a subtask's state readSubtask names.
var subtaskParts = []string{"managed-operator-state", "raw-operator-state", "managed-keyed-state", "raw-keyed-state",
	"input-channel-state", "result-subpartition-state", "ref-checkpoint-id"}

func init() {
	for _, p := range subtaskParts {
		ReasonTexts[ReasonInSubtask+"-"+p] = "subtask {subtask} " + strings.ReplaceAll(p, "-", " ") + ": {cause}"
	}
}

// ReasonTexts is each code's English sentence: {name} is filled from Args,
// {cause} with the wrapped reason's sentence. static/i18n/en.json holds the
// same sentences (reason_test.go checks both catalogues).
var ReasonTexts = map[string]string{
	ReasonNoStream:           "the handle has no stream",
	ReasonOutsideMetadata:    `the state is in {kind} "{path}", outside the _metadata file; give 'statelab savepoint inspect' the savepoint's directory to read it`,
	ReasonNoMeta:             "the state's meta information was not found before its data",
	ReasonOperatorMetaVer:    "operator state meta version {version}: StateLab reads versions 5 and 6 (Flink 1.7 and later)",
	ReasonOperatorCompressed: "the operator states are compressed (execution.checkpointing.snapshot-compression); StateLab does not decompress them",
	ReasonElementBytesLeft:   "a {type} element left {left} of {total} bytes unread; values stay bytes",
	ReasonNoDecoder:          `no decoder for serializer "{serializer}"`,
	ReasonBroadcastSerUnkn:   `broadcast state "{state}": key or value serializer unknown`,
	ReasonBroadcastBytesLeft: `broadcast state "{state}" left {left} bytes unread`,
	ReasonNoKeyGroupOffsets:  "the handle has no key-group offsets (incremental and changelog handles keep the backend's own files)",
	ReasonKeyedMetaVer:       "keyed backend meta version {version}: StateLab reads versions 5 and 6",
	ReasonKeyedCompressed:    "the key groups are compressed (execution.checkpointing.snapshot-compression); StateLab does not decompress them",
	ReasonKeySerializer:      "the key serializer: {cause}",
	ReasonKeySerUnknown:      "key serializer unknown",
	ReasonSerializerFormat:   "serializer snapshot {class} has a format StateLab does not know, so it cannot read past it; values stay bytes",
	ReasonStatesAfter:        "states after the ones listed: {cause}",
	ReasonOffsetBeyond:       "key group {keyGroup}'s offset {offset} is beyond the {bytes} inline bytes",
	ReasonKeyGroup:           "key group {keyGroup}: {cause}",
	ReasonValuesNotDecoded:   `state "{state}"'s values are not decoded (serializer {serializer})`,
	ReasonNamespaceUnknown:   `state "{state}" has a namespace StateLab does not decode (serializer {serializer})`,
	ReasonTimerUnreadable:    "timer serializer with key or namespace StateLab does not read",
	ReasonSerializersUnknown: "its serializers are not ones StateLab reads, so the rest of each key group is not read",
	// The reader's own failures: each is the tail of the error's English
	// text (the CLI prints the error).
	ReasonTruncated:           "file ends early: {what} needs {need} bytes at offset {offset}, {left} left",
	ReasonNegativeCount:       "corrupt metadata: {what} is {value} at offset {offset}",
	ReasonCountBeyond:         "corrupt metadata: {what} is {value} at offset {offset}, but only {left} bytes follow",
	ReasonNotUTF8:             "corrupt metadata: {what} is not modified UTF-8 (offset {offset})",
	ReasonTooDeep:             "corrupt metadata: {what} nested more than {depth} deep at offset {offset}",
	ReasonTooShort:            "not a Flink checkpoint metadata file: the file has {size} bytes, fewer than the 4-byte magic number {magic}",
	ReasonBadMagic:            "not a Flink checkpoint metadata file: it starts with {found}, Flink's _metadata starts with {magic}",
	ReasonVersionOld:          "unsupported metadata version: version {version} was written by Flink 1.10 or older; StateLab reads versions {min} to {max} (Flink 1.11 and later)",
	ReasonVersionNew:          "unsupported metadata version: version {version} is unknown; StateLab reads versions {min} to {max} (a newer Flink may have written this file)",
	ReasonNegativeID:          "corrupt metadata: checkpoint id {id} is negative",
	ReasonMasterMagic:         "corrupt metadata: master state starts with {found}, not {magic}",
	ReasonMasterLength:        "corrupt metadata: master state length {length}",
	ReasonMasterTrailing:      `corrupt metadata: {left} trailing bytes in master state "{name}"`,
	ReasonParallelism:         "corrupt metadata: operator {operator} has parallelism {parallelism} and max parallelism {maxParallelism}",
	ReasonCoordinatorKind:     "corrupt metadata: coordinator state of operator {operator} is a {kind}, Flink expects a ByteStreamStateHandle",
	ReasonFinishedCoordinator: "corrupt metadata: fully finished operator {operator} has coordinator state",
	ReasonSubtaskBeyond:       "corrupt metadata: operator {operator} has parallelism {parallelism} but state for subtask {subtask}",
	ReasonStateScope:          "corrupt metadata: checkpointed state scope {scope} (want 0 SHARED or 1 EXCLUSIVE)",
	ReasonKeyGroupRange:       "corrupt metadata: key-group range start {start}, {count} key groups",
	ReasonStreamHandleKind:    "unknown state handle kind: stream state handle type {type} at offset {offset} (StateLab knows {known})",
	ReasonKeyedHandleKind:     "unknown state handle kind: keyed state handle type {type} at offset {offset} (StateLab knows {known})",
	ReasonOperatorHandleKind:  "unknown state handle kind: operator state handle type {type} at offset {offset} (StateLab knows {known})",
	ReasonChannelHandleKind:   "channel state handle type {type} at offset {offset} (the type must be one of {known})",
	ReasonChangelogPart:       "corrupt metadata: non-materialized part of a changelog handle is {kind}, Flink expects a ChangelogStateHandle",
	ReasonDistributionMode:    `corrupt metadata: operator state "{state}" has distribution mode {mode} (want 0 SPLIT_DISTRIBUTE, 1 UNION or 2 BROADCAST)`,
	ReasonSegmentDelegate:     "corrupt metadata: a file-merging operator state handle must delegate to a segment file",
	ReasonStringLength:        "corrupt metadata: string length too long",
	ReasonStringBeyond:        "corrupt metadata: string of {chars} characters with {left} bytes left",
	ReasonEmptyKey:            "corrupt metadata: an empty key (a key holds at least its key-group prefix)",
	ReasonInMasterState:       "master state {index}: {cause}",
	ReasonInOperator:          "operator state {index}: {cause}",
	ReasonInCoordinator:       "coordinator state: {cause}",
	ReasonCorrupt:             "{detail}",
	ReasonUnreadable:          "{detail}",
}

var placeholder = regexp.MustCompile(`\{(\w+)\}`)

// Text is the reason's English sentence.
func (r Reason) Text() string {
	return placeholder.ReplaceAllStringFunc(ReasonTexts[r.Code], func(m string) string {
		name := m[1 : len(m)-1]
		if name == "cause" && r.Cause != nil {
			return r.Cause.Text()
		}
		if v, ok := r.Args[name]; ok {
			return v
		}
		return m
	})
}

// reason builds a Reason from a code and name/value pairs.
func reason(code string, kv ...string) Reason {
	r := Reason{Code: code}
	if len(kv) > 0 {
		r.Args = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			r.Args[kv[i]] = kv[i+1]
		}
	}
	return r
}

// wrap builds a reason that wraps err's.
func wrap(err error, code string, kv ...string) Reason {
	r := reason(code, kv...)
	c := reasonFor(err)
	r.Cause = &c
	return r
}

// notDecoded is how every NotDecoded field is set: the English text and the
// reason it came from.
func notDecoded(r Reason) (string, *Reason) {
	return r.Text(), &r
}

// reasonError is an error that carries its Reason up through the decoders.
type reasonError struct{ r Reason }

func (e *reasonError) Error() string { return e.r.Text() }

// because is an error with a reason.
func because(code string, kv ...string) error {
	return &reasonError{reason(code, kv...)}
}

// reasonFor is the reason an error gives: its own when it carries one (the
// innermost wrapped by fmt.Errorf's %w), else the reader's kind of failure
// with the error's English text as the detail.
func reasonFor(err error) Reason {
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch e := e.(type) {
		case *reasonError:
			return e.r
		case *failure:
			return e.r
		case *located:
			r := e.r
			c := reasonFor(e.err)
			r.Cause = &c
			return r
		}
	}
	if errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt) {
		return reason(ReasonCorrupt, "detail", err.Error())
	}
	return reason(ReasonUnreadable, "detail", err.Error())
}

// ReasonOf is the reason an error of Read (or of the decoders) gives: a
// code and the values its sentence names, for a page to say in its own
// language. An error from elsewhere is ReasonUnreadable with its text.
func ReasonOf(err error) Reason { return reasonFor(err) }

// errNotDecoded sets a NotDecoded field from an error: the error's full
// English text (with any context fmt.Errorf added) and its reason.
func errNotDecoded(err error) (string, *Reason) {
	r := reasonFor(err)
	return err.Error(), &r
}

// withText sets a NotDecoded field whose English text adds context to the
// reason's own sentence (the wrapped error's full message).
func withText(text string, r Reason) (string, *Reason) {
	return text, &r
}
