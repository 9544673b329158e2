package savepoint

import (
	"fmt"
	"strings"
)

// Properties are Flink's CheckpointProperties, which metadata versions 4 and
// later append with java.io.ObjectOutputStream (MetadataV4Serializer,
// MetadataWithPropertiesSerializer).
type Properties struct {
	// SnapshotType is the checkpointType field's class: SavepointType or CheckpointType.
	SnapshotType string `json:"snapshotType"`
	// Name is the type's name ("Savepoint", "Suspend Savepoint", "Checkpoint", …).
	Name string `json:"name,omitempty"`
	// FormatType is a savepoint's SavepointFormatType: CANONICAL or NATIVE.
	FormatType string `json:"formatType,omitempty"`
	// PostCheckpointAction is a savepoint's SavepointType.PostCheckpointAction: NONE, SUSPEND or TERMINATE.
	PostCheckpointAction string `json:"postCheckpointAction,omitempty"`
	// SharingFilesStrategy is a checkpoint's CheckpointType.SharingFilesStrategy.
	SharingFilesStrategy string `json:"sharingFilesStrategy,omitempty"`
	// The boolean fields of CheckpointProperties, by name (forced, discardSubsumed, …, unclaimed).
	Flags map[string]bool `json:"flags"`
}

// IsSavepoint reports whether the properties describe a savepoint.
func (p *Properties) IsSavepoint() bool {
	return p != nil && strings.HasSuffix(p.SnapshotType, "SavepointType")
}

// readProperties reads the Java-serialized CheckpointProperties.
func readProperties(b []byte) (*Properties, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("no checkpoint properties after the operator states")
	}
	d := &javaDecoder{r: reader{b: b}}
	v, err := d.readStream()
	if err != nil {
		return nil, fmt.Errorf("checkpoint properties: %w", err)
	}
	obj, ok := v.(*javaObject)
	if !ok || !strings.HasSuffix(obj.class, ".CheckpointProperties") {
		return nil, fmt.Errorf("checkpoint properties: found %s, want org.apache.flink.runtime.checkpoint.CheckpointProperties", describeJava(v))
	}
	p := &Properties{Flags: map[string]bool{}}
	for name, f := range obj.fields {
		if bv, ok := f.(bool); ok {
			p.Flags[name] = bv
		}
	}
	if t, ok := obj.fields["checkpointType"].(*javaObject); ok {
		p.SnapshotType = t.class[strings.LastIndex(t.class, ".")+1:]
		if s, ok := t.fields["name"].(string); ok {
			p.Name = s
		}
		if e, ok := t.fields["formatType"].(javaEnum); ok {
			p.FormatType = e.name
		}
		if e, ok := t.fields["postCheckpointAction"].(javaEnum); ok {
			p.PostCheckpointAction = e.name
		}
		if e, ok := t.fields["sharingFilesStrategy"].(javaEnum); ok {
			p.SharingFilesStrategy = e.name
		}
	}
	return p, nil
}

func describeJava(v any) string {
	switch x := v.(type) {
	case *javaObject:
		return "an object of class " + x.class
	case nil:
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}

// A small reader of the Java Object Serialization Stream Protocol, enough for
// CheckpointProperties: objects of Serializable classes with default field
// serialization, strings, enums, back references and nulls. Anything else
// (custom writeObject data, externalizable classes, arrays) is refused with
// an error rather than guessed at.

const (
	tcNull        = 0x70
	tcReference   = 0x71
	tcClassDesc   = 0x72
	tcObject      = 0x73
	tcString      = 0x74
	tcEndBlock    = 0x78
	tcLongString  = 0x7C
	tcEnum        = 0x7E
	baseHandle    = 0x7e0000
	scWriteMethod = 0x01
	scSerializabl = 0x02
	scExternal    = 0x04
	maxJavaValues = 4096
)

type javaField struct {
	typ  byte
	name string
}

type javaClassDesc struct {
	name   string
	flags  byte
	fields []javaField
	super  *javaClassDesc
}

type javaObject struct {
	class  string
	fields map[string]any
}

type javaEnum struct {
	class, name string
}

type javaDecoder struct {
	r       reader
	handles []any
	values  int
}

func (d *javaDecoder) readStream() (any, error) {
	magic, err := d.r.u16("stream magic")
	if err != nil {
		return nil, err
	}
	ver, err := d.r.u16("stream version")
	if err != nil {
		return nil, err
	}
	if magic != 0xACED || ver != 5 {
		return nil, fmt.Errorf("not a Java serialization stream (starts 0x%04x%04x, want 0xaced0005)", magic, ver)
	}
	return d.content()
}

func (d *javaDecoder) newHandle(v any) int {
	d.handles = append(d.handles, v)
	return len(d.handles) - 1
}

func (d *javaDecoder) content() (any, error) {
	d.values++
	if d.values > maxJavaValues {
		return nil, fmt.Errorf("more than %d values", maxJavaValues)
	}
	if err := d.r.enter("java object"); err != nil {
		return nil, err
	}
	defer d.r.leave()
	at := d.r.pos
	tc, err := d.r.u8("type code")
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		return d.reference()
	case tcString, tcLongString:
		return d.stringBody(tc)
	case tcEnum:
		cd, err := d.classDesc()
		if err != nil {
			return nil, err
		}
		h := d.newHandle(nil)
		name, err := d.content()
		if err != nil {
			return nil, err
		}
		s, ok := name.(string)
		if !ok || cd == nil {
			return nil, fmt.Errorf("enum constant at offset %d has no name", at)
		}
		e := javaEnum{class: cd.name, name: s}
		d.handles[h] = e
		return e, nil
	case tcObject:
		cd, err := d.classDesc()
		if err != nil {
			return nil, err
		}
		if cd == nil {
			return nil, fmt.Errorf("object at offset %d has no class", at)
		}
		obj := &javaObject{class: cd.name, fields: map[string]any{}}
		d.newHandle(obj)
		var chain []*javaClassDesc
		for c := cd; c != nil; c = c.super {
			chain = append(chain, c)
			if len(chain) > maxDepth {
				return nil, fmt.Errorf("class hierarchy deeper than %d", maxDepth)
			}
		}
		for i := len(chain) - 1; i >= 0; i-- {
			c := chain[i]
			if c.flags&scExternal != 0 {
				return nil, fmt.Errorf("class %s is Externalizable, which this reader does not read", c.name)
			}
			if c.flags&scSerializabl == 0 {
				continue
			}
			for _, f := range c.fields {
				v, err := d.fieldValue(f.typ)
				if err != nil {
					return nil, fmt.Errorf("field %s.%s: %w", c.name, f.name, err)
				}
				obj.fields[f.name] = v
			}
			if c.flags&scWriteMethod != 0 {
				if err := d.skipAnnotation(); err != nil {
					return nil, fmt.Errorf("class %s: %w", c.name, err)
				}
			}
		}
		return obj, nil
	}
	return nil, fmt.Errorf("type code 0x%02x at offset %d is not one this reader reads", tc, at)
}

func (d *javaDecoder) reference() (any, error) {
	h, err := d.r.i32("handle")
	if err != nil {
		return nil, err
	}
	i := int(h) - baseHandle
	if i < 0 || i >= len(d.handles) {
		return nil, fmt.Errorf("reference to unknown handle 0x%x", h)
	}
	return d.handles[i], nil
}

func (d *javaDecoder) stringBody(tc byte) (any, error) {
	var n int
	if tc == tcString {
		u, err := d.r.u16("string length")
		if err != nil {
			return nil, err
		}
		n = int(u)
	} else {
		l, err := d.r.i64("long string length")
		if err != nil {
			return nil, err
		}
		if l < 0 || l > int64(d.r.remaining()) {
			return nil, fmt.Errorf("long string of %d bytes with %d left", l, d.r.remaining())
		}
		n = int(l)
	}
	b, err := d.r.bytes(n, "string")
	if err != nil {
		return nil, err
	}
	s, ok := decodeModifiedUTF8(b)
	if !ok {
		return nil, fmt.Errorf("string is not modified UTF-8")
	}
	d.newHandle(s)
	return s, nil
}

func (d *javaDecoder) classDesc() (*javaClassDesc, error) {
	if err := d.r.enter("class descriptor"); err != nil {
		return nil, err
	}
	defer d.r.leave()
	at := d.r.pos
	tc, err := d.r.u8("class descriptor")
	if err != nil {
		return nil, err
	}
	switch tc {
	case tcNull:
		return nil, nil
	case tcReference:
		v, err := d.reference()
		if err != nil {
			return nil, err
		}
		cd, ok := v.(*javaClassDesc)
		if !ok {
			return nil, fmt.Errorf("reference at offset %d is not a class descriptor", at)
		}
		return cd, nil
	case tcClassDesc:
	default:
		return nil, fmt.Errorf("class descriptor type 0x%02x at offset %d is not one this reader reads", tc, at)
	}
	cd := &javaClassDesc{}
	if cd.name, err = d.r.utf("class name"); err != nil {
		return nil, err
	}
	if _, err := d.r.i64("serialVersionUID"); err != nil {
		return nil, err
	}
	d.newHandle(cd)
	if cd.flags, err = d.r.u8("class flags"); err != nil {
		return nil, err
	}
	n, err := d.r.u16("field count")
	if err != nil {
		return nil, err
	}
	if int(n)*3 > d.r.remaining() {
		return nil, fmt.Errorf("%d fields with %d bytes left", n, d.r.remaining())
	}
	for range n {
		var f javaField
		if f.typ, err = d.r.u8("field type"); err != nil {
			return nil, err
		}
		if f.name, err = d.r.utf("field name"); err != nil {
			return nil, err
		}
		switch f.typ {
		case 'B', 'C', 'D', 'F', 'I', 'J', 'S', 'Z':
		case 'L', '[':
			if _, err := d.content(); err != nil { // the field's class name
				return nil, err
			}
		default:
			return nil, fmt.Errorf("field %s has type code %q", f.name, f.typ)
		}
		cd.fields = append(cd.fields, f)
	}
	if err := d.skipAnnotation(); err != nil {
		return nil, err
	}
	if cd.super, err = d.classDesc(); err != nil {
		return nil, err
	}
	return cd, nil
}

// skipAnnotation reads contents up to TC_ENDBLOCKDATA; only objects without
// block data are expected there.
func (d *javaDecoder) skipAnnotation() error {
	for {
		if d.r.remaining() == 0 {
			return ErrTruncated
		}
		if d.r.b[d.r.pos] == tcEndBlock {
			d.r.pos++
			return nil
		}
		if _, err := d.content(); err != nil {
			return err
		}
	}
}

func (d *javaDecoder) fieldValue(t byte) (any, error) {
	switch t {
	case 'Z':
		return d.r.boolean("boolean")
	case 'B':
		return d.r.i8("byte")
	case 'C', 'S':
		v, err := d.r.u16("char/short")
		return int64(v), err
	case 'I', 'F':
		v, err := d.r.i32("int/float")
		return int64(v), err
	case 'J', 'D':
		return d.r.i64("long/double")
	}
	return d.content()
}
