package org.statelab.flinkref;

import java.util.Objects;

/**
 * A record as StateLab's engine carries it (engine.Record): key, value, text and event timestamp (ms). A
 * Flink POJO (public fields, no-argument constructor), so Flink's PojoSerializer handles it.
 */
public class Rec {
    public String key = "";
    public long value;
    public String text = "";
    public long ts;

    public Rec() {}

    public Rec(String key, long value, String text, long ts) {
        this.key = key;
        this.value = value;
        this.text = text == null ? "" : text;
        this.ts = ts;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof Rec r)) {
            return false;
        }
        return value == r.value && ts == r.ts && Objects.equals(key, r.key) && Objects.equals(text, r.text);
    }

    @Override
    public int hashCode() {
        return Objects.hash(key, value, text, ts);
    }

    @Override
    public String toString() {
        return key + "=" + value + (text.isEmpty() ? "" : " " + text);
    }
}
