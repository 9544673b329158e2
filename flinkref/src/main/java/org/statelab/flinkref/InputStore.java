package org.statelab.flinkref;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The records a source reads, from the input file StateLab wrote: {@code {"sources": {"source": [[{"text":
 * "...", "key": "...", "ts": 0}, ...], ...]}}}, one list per partition, in offset order. A partition's
 * records are what StateLab's topic holds at those offsets, so both read exactly the same data.
 */
public final class InputStore {
    private InputStore() {}

    private static final Map<String, Map<String, List<List<Rec>>>> cache = new ConcurrentHashMap<>();

    static List<List<Rec>> partitions(String file, String source) {
        Map<String, List<List<Rec>>> all = cache.computeIfAbsent(file, InputStore::load);
        List<List<Rec>> p = all.get(source);
        if (p == null) {
            throw new IllegalArgumentException(
                    "input file " + file + " has no records for source " + source + " (sources: " + all.keySet() + ")");
        }
        return p;
    }

    private static Map<String, List<List<Rec>>> load(String file) {
        try {
            JsonNode root = new ObjectMapper().readTree(new File(file));
            Map<String, List<List<Rec>>> out = new ConcurrentHashMap<>();
            root.path("sources").fields().forEachRemaining(e -> {
                List<List<Rec>> parts = new ArrayList<>();
                for (JsonNode part : e.getValue()) {
                    List<Rec> recs = new ArrayList<>();
                    for (JsonNode r : part) {
                        String text = r.path("text").asText("");
                        String key = r.has("key") ? r.get("key").asText() : text;
                        recs.add(new Rec(key, r.path("value").asLong(0), text, r.path("ts").asLong(0)));
                    }
                    parts.add(recs);
                }
                out.put(e.getKey(), parts);
            });
            return out;
        } catch (IOException e) {
            throw new IllegalArgumentException("read input file " + file + ": " + e.getMessage(), e);
        }
    }
}
