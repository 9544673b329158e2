package savepoint

import (
	"errors"
	"regexp"
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
	ReasonTruncated          = "truncated"
	ReasonCorrupt            = "corrupt"
	ReasonUnreadable         = "unreadable"
)

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
	// The reader's own errors: where the bytes ended early or did not fit
	// Flink's format; detail is the reader's English message (the offset and
	// field it was reading).
	ReasonTruncated:  "{detail}",
	ReasonCorrupt:    "{detail}",
	ReasonUnreadable: "{detail}",
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
	var re *reasonError
	switch {
	case errors.As(err, &re):
		return re.r
	case errors.Is(err, ErrTruncated):
		return reason(ReasonTruncated, "detail", err.Error())
	case errors.Is(err, ErrCorrupt):
		return reason(ReasonCorrupt, "detail", err.Error())
	}
	return reason(ReasonUnreadable, "detail", err.Error())
}

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
