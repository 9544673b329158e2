// FlinkVectors writes the held-out test vectors in rescale/testdata/*.txt and
// *.jsonl. It runs on a JVM so that java.lang.String/Integer/Long.hashCode and
// java.util.HashMap iteration order are the real ones, and transcribes Flink's
// KeyGroupRangeAssignment, MathUtils.murmurHash and
// RoundRobinOperatorStateRepartitioner (apache/flink, flink-runtime) step by step.
//
// Regenerate (Java 17):  cd rescale/testdata/flinkgen && java FlinkVectors.java ..
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.util.*;

public class FlinkVectors {
    // ---- org.apache.flink.util.MathUtils ----
    static int murmurHash(int code) {
        code *= 0xcc9e2d51;
        code = Integer.rotateLeft(code, 15);
        code *= 0x1b873593;
        code = Integer.rotateLeft(code, 13);
        code = code * 5 + 0xe6546b64;
        code ^= 4;
        code = bitMix(code);
        if (code >= 0) return code;
        else if (code != Integer.MIN_VALUE) return -code;
        else return 0;
    }
    static int bitMix(int in) {
        in ^= in >>> 16; in *= 0x85ebca6b; in ^= in >>> 13; in *= 0xc2b2ae35; in ^= in >>> 16; return in;
    }
    static int roundUpToPowerOfTwo(int x) {
        x = x - 1; x |= x >> 1; x |= x >> 2; x |= x >> 4; x |= x >> 8; x |= x >> 16; return x + 1;
    }
    // ---- org.apache.flink.runtime.state.KeyGroupRangeAssignment ----
    static int keyGroup(Object key, int maxParallelism) { return murmurHash(key.hashCode()) % maxParallelism; }
    static int operatorIndex(int maxParallelism, int parallelism, int keyGroupId) { return keyGroupId * parallelism / maxParallelism; }
    static int[] range(int maxParallelism, int parallelism, int operatorIndex) {
        int start = ((operatorIndex * maxParallelism + parallelism - 1) / parallelism);
        int end = ((operatorIndex + 1) * maxParallelism - 1) / parallelism;
        return new int[] {start, end};
    }
    static int defaultMax(int p) { return Math.min(Math.max(roundUpToPowerOfTwo(p + (p / 2)), 1 << 7), 1 << 15); }

    static String hex(byte[] b) { StringBuilder s = new StringBuilder(); for (byte x : b) s.append(String.format("%02x", x)); return s.toString(); }

    static String randomString(Random r) {
        int len = r.nextInt(12);
        StringBuilder s = new StringBuilder();
        for (int i = 0; i < len; i++) {
            int kind = r.nextInt(10);
            if (kind < 4) s.append((char) (0x20 + r.nextInt(95)));
            else if (kind == 4) s.append((char) (0xA0 + r.nextInt(0x700)));
            else if (kind == 5) s.append((char) (0x4E00 + r.nextInt(0x5000)));   // CJK: 状态 检查点 …
            else if (kind == 6) s.appendCodePoint(0x1F300 + r.nextInt(0x300)); // emoji: two UTF-16 units
            else if (kind == 7) s.appendCodePoint(0x10000 + r.nextInt(0xFFFFF)); // any supplementary plane
            else if (kind == 8) s.append("\t");
            else s.append((char) ('a' + r.nextInt(26)));
        }
        return s.toString();
    }

    static int randomMax(Random r) {
        int[] edges = {1, 2, 3, 7, 10, 127, 128, 129, 4096, 32767, 32768};
        int k = r.nextInt(4);
        if (k == 0) return edges[r.nextInt(edges.length)];
        if (k == 1) return 1 + r.nextInt(256);
        return 1 + r.nextInt(32768);
    }

    public static void main(String[] args) throws Exception {
        String dir = args.length > 0 ? args[0] : ".";
        Random r = new Random(20261129L);
        try (PrintWriter w = new PrintWriter(new OutputStreamWriter(new FileOutputStream(dir + "/flink_keygroups.txt"), StandardCharsets.UTF_8))) {
            w.println("# type key maxParallelism parallelism javaHash keyGroup operatorIndex  (string keys as UTF-8 hex, '-' for empty)");
            for (int i = 0; i < 4000; i++) {
                int max = randomMax(r);
                int p = 1 + r.nextInt(max);
                Object key; String shown;
                int t = i % 3;
                if (t == 0) {
                    String s = i < 40 ? new String[] {"", "hello", "user-42", "状态", "检查点", "😀", "a\tb", "𝄞clef", "key-0", "Flink"}[i % 10] : randomString(r);
                    key = s; byte[] b = s.getBytes(StandardCharsets.UTF_8); shown = b.length == 0 ? "-" : hex(b);
                    w.print("string ");
                } else if (t == 1) {
                    int[] ex = {Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1, 1, 42};
                    int v = i < 60 ? ex[i % ex.length] : r.nextInt();
                    key = v; shown = Integer.toString(v);
                    w.print("int ");
                } else {
                    long[] ex = {Long.MIN_VALUE, Long.MAX_VALUE, 0L, -1L, 1L, 4294967296L, -4294967296L};
                    long v = i < 70 ? ex[i % ex.length] : r.nextLong();
                    key = v; shown = Long.toString(v);
                    w.print("long ");
                }
                int kg = keyGroup(key, max);
                w.println(shown + " " + max + " " + p + " " + key.hashCode() + " " + kg + " " + operatorIndex(max, p, kg));
            }
        }
        try (PrintWriter w = new PrintWriter(new FileOutputStream(dir + "/flink_ranges.txt"))) {
            w.println("# maxParallelism parallelism subtask start end");
            for (int i = 0; i < 1500; i++) {
                int max = randomMax(r);
                int p = 1 + r.nextInt(max);
                int idx = i % 3 == 0 ? 0 : i % 3 == 1 ? p - 1 : r.nextInt(p);
                int[] rg = range(max, p, idx);
                w.println(max + " " + p + " " + idx + " " + rg[0] + " " + rg[1]);
            }
            w.println("# default: parallelism defaultMaxParallelism");
            for (int p : new int[] {1, 2, 3, 42, 85, 86, 87, 128, 170, 171, 1000, 10922, 10923, 21845, 21846, 32768}) {
                w.println("default " + p + " " + defaultMax(p));
            }
            for (int i = 0; i < 200; i++) { int p = 1 + r.nextInt(32768); w.println("default " + p + " " + defaultMax(p)); }
        }
        try (PrintWriter w = new PrintWriter(new OutputStreamWriter(new FileOutputStream(dir + "/flink_repartition.jsonl"), StandardCharsets.UTF_8))) {
            for (int c = 0; c < 400; c++) w.println(repartitionCase(r, c));
        }
    }

    // ---------------- operator state ----------------
    enum Mode { SPLIT_DISTRIBUTE, UNION, BROADCAST }
    static final class Meta { final List<String> elements; final Mode mode; Meta(List<String> e, Mode m) { elements = e; mode = m; } }

    static String[] NAMES = {"offsets", "source-offsets", "pending", "buffer", "rules", "partitions", "a", "b", "c", "topic-partition-offset-states", "state-1", "state-2", "union-offsets", "Aa", "BB", "C#"};

    static String repartitionCase(Random r, int c) {
        int oldP = 1 + r.nextInt(6);
        int newP = c % 7 == 0 ? oldP : 1 + r.nextInt(7);
        int nStates = c % 10 == 5 ? NAMES.length : 1 + r.nextInt(c % 5 == 0 ? 12 : 4);
        List<String> names = new ArrayList<>(Arrays.asList(NAMES));
        Collections.shuffle(names, r);
        names = names.subList(0, nStates);
        Map<String, Mode> modes = new LinkedHashMap<>();
        for (String n : names) { int k = r.nextInt(6); modes.put(n, k < 3 ? Mode.SPLIT_DISTRIBUTE : k < 5 ? Mode.UNION : Mode.BROADCAST); }
        // registration order per subtask: the same for all subtasks of one operator
        // old subtask states: name -> elements (a missing broadcast copy marks a finished task, rarely)
        List<LinkedHashMap<String, Meta>> old = new ArrayList<>();
        int elem = 0;
        for (int s = 0; s < oldP; s++) {
            LinkedHashMap<String, Meta> m = new LinkedHashMap<>();
            for (String n : names) {
                Mode mode = modes.get(n);
                List<String> el = new ArrayList<>();
                if (mode == Mode.BROADCAST) {
                    if (oldP > 1 && s == 0 && c % 11 == 0) continue; // finished subtask without the broadcast state
                    int k = r.nextInt(3); for (int i = 0; i < k; i++) el.add("k" + i + "=v" + s);
                } else {
                    int k = r.nextInt(c % 3 == 0 ? 8 : 4); for (int i = 0; i < k; i++) el.add(n + "#" + (elem++));
                }
                m.put(n, new Meta(el, mode));
            }
            old.add(m);
        }
        // What the snapshot metadata map of each subtask looks like (DefaultOperatorStateBackend):
        // registered list states / broadcast states live in HashMap<>(); the snapshot deep-copies them
        // into HashMap<>(size) and writes them into HashMap<>(listCount + broadcastCount).
        List<Map<String, Meta>> handles = new ArrayList<>();
        for (LinkedHashMap<String, Meta> m : old) {
            HashMap<String, Meta> regList = new HashMap<>(), regBc = new HashMap<>();
            for (Map.Entry<String, Meta> e : m.entrySet()) (e.getValue().mode == Mode.BROADCAST ? regBc : regList).put(e.getKey(), e.getValue());
            HashMap<String, Meta> cpList = new HashMap<>(regList.size()); for (Map.Entry<String, Meta> e : regList.entrySet()) cpList.put(e.getKey(), e.getValue());
            HashMap<String, Meta> cpBc = new HashMap<>(regBc.size()); for (Map.Entry<String, Meta> e : regBc.entrySet()) cpBc.put(e.getKey(), e.getValue());
            HashMap<String, Meta> written = new HashMap<>(cpList.size() + cpBc.size());
            for (Map.Entry<String, Meta> e : cpList.entrySet()) written.put(e.getKey(), e.getValue());
            for (Map.Entry<String, Meta> e : cpBc.entrySet()) written.put(e.getKey(), e.getValue());
            handles.add(written);
        }
        List<TreeMap<Integer, Map<String, List<String>>>> merge = repartition(handles, oldP, newP);
        // Result per new subtask: per name, elements of the handles in ascending old-subtask order.
        StringBuilder out = new StringBuilder();
        out.append("{\"input\":{\"newParallelism\":").append(newP).append(",\"subtasks\":[");
        for (int s = 0; s < oldP; s++) {
            if (s > 0) out.append(',');
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, Meta> e : old.get(s).entrySet()) {
                if (!first) out.append(','); first = false;
                out.append(q(e.getKey())).append(":{\"mode\":\"").append(e.getValue().mode).append("\",\"elements\":").append(arr(e.getValue().elements)).append('}');
            }
            out.append('}');
        }
        out.append("]},\"expected\":{\"subtasks\":[");
        for (int i = 0; i < newP; i++) {
            if (i > 0) out.append(',');
            out.append('{');
            boolean first = true;
            for (String n : names) {
                List<String> all = new ArrayList<>();
                for (Map<String, List<String>> h : merge.get(i).values()) { List<String> l = h.get(n); if (l != null) all.addAll(l); }
                if (!first) out.append(','); first = false;
                out.append(q(n)).append(':').append(arr(all));
            }
            out.append('}');
        }
        out.append("]}}");
        return out.toString();
    }

    // RoundRobinOperatorStateRepartitioner.repartitionState, with StreamStateHandle = old subtask index.
    // mergeMap per new subtask: old subtask index -> (name -> elements); a TreeMap so handles are read
    // in ascending old-subtask order.
    static List<TreeMap<Integer, Map<String, List<String>>>> repartition(List<Map<String, Meta>> prev, int oldP, int newP) {
        List<TreeMap<Integer, Map<String, List<String>>>> merge = new ArrayList<>();
        if (newP == oldP) {
            Map<String, List<Object[]>> union = new HashMap<>(prev.size());
            Map<String, List<Object[]>> bcast = new HashMap<>();
            Map<String, Integer> bcCount = new HashMap<>();
            for (int s = 0; s < prev.size(); s++)
                for (Map.Entry<String, Meta> e : prev.get(s).entrySet()) {
                    if (e.getValue().mode == Mode.UNION) union.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(new Object[] {s, e.getValue()});
                    if (e.getValue().mode == Mode.BROADCAST) bcast.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(new Object[] {s, e.getValue()});
                }
            bcast.entrySet().removeIf(e -> e.getValue().size() == oldP); // only partly finished broadcast states move
            for (int s = 0; s < prev.size(); s++) {
                TreeMap<Integer, Map<String, List<String>>> m = new TreeMap<>();
                Map<String, List<String>> own = new HashMap<>();
                for (Map.Entry<String, Meta> e : prev.get(s).entrySet()) own.put(e.getKey(), e.getValue().elements);
                m.put(s, own);
                merge.add(m);
            }
            if (union.isEmpty() && bcast.isEmpty()) return merge;
            for (TreeMap<Integer, Map<String, List<String>>> m : merge)
                for (Map.Entry<String, List<Object[]>> e : union.entrySet())
                    for (Object[] h : e.getValue()) m.computeIfAbsent((Integer) h[0], k -> new HashMap<>()).put(e.getKey(), ((Meta) h[1]).elements);
            for (int i = 0; i < merge.size(); i++) {
                for (Map.Entry<String, List<Object[]>> e : bcast.entrySet()) {
                    if (merge.get(i).containsKey(i) && merge.get(i).get(i).containsKey(e.getKey())) continue; // has its own copy
                    Object[] h = e.getValue().get(i % e.getValue().size());
                    merge.get(i).computeIfAbsent((Integer) h[0], k -> new HashMap<>()).put(e.getKey(), ((Meta) h[1]).elements);
                }
            }
            return merge;
        }
        EnumMap<Mode, Map<String, List<Object[]>>> byMode = new EnumMap<>(Mode.class);
        for (Mode m : Mode.values()) byMode.put(m, new HashMap<>());
        for (int s = 0; s < prev.size(); s++)
            for (Map.Entry<String, Meta> e : prev.get(s).entrySet())
                byMode.get(e.getValue().mode).computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(new Object[] {s, e.getValue()});
        for (int i = 0; i < newP; i++) merge.add(new TreeMap<>());
        int startParallelOp = 0;
        for (Map.Entry<String, List<Object[]>> e : byMode.get(Mode.SPLIT_DISTRIBUTE).entrySet()) {
            List<Object[]> current = e.getValue();
            int totalPartitions = 0;
            for (Object[] h : current) totalPartitions += ((Meta) h[1]).elements.size();
            int lstIdx = 0, offsetIdx = 0;
            int baseFraction = totalPartitions / newP, remainder = totalPartitions % newP;
            int newStartParallelOp = startParallelOp;
            for (int i = 0; i < newP; ++i) {
                int parallelOpIdx = (i + startParallelOp) % newP;
                int numberOfPartitionsToAssign = baseFraction;
                if (remainder > 0) { ++numberOfPartitionsToAssign; --remainder; }
                else if (remainder == 0) { newStartParallelOp = parallelOpIdx; --remainder; }
                while (numberOfPartitionsToAssign > 0) {
                    Object[] h = current.get(lstIdx);
                    List<String> offsets = ((Meta) h[1]).elements;
                    int remaining = offsets.size() - offsetIdx;
                    List<String> offs;
                    if (remaining > numberOfPartitionsToAssign) {
                        offs = offsets.subList(offsetIdx, offsetIdx + numberOfPartitionsToAssign);
                        offsetIdx += numberOfPartitionsToAssign;
                    } else {
                        offs = offsets.subList(offsetIdx, offsets.size());
                        offsetIdx = 0; ++lstIdx;
                    }
                    numberOfPartitionsToAssign -= remaining;
                    merge.get(parallelOpIdx).computeIfAbsent((Integer) h[0], k -> new HashMap<>()).put(e.getKey(), offs);
                }
            }
            startParallelOp = newStartParallelOp;
        }
        for (TreeMap<Integer, Map<String, List<String>>> m : merge)
            for (Map.Entry<String, List<Object[]>> e : byMode.get(Mode.UNION).entrySet())
                for (Object[] h : e.getValue()) m.computeIfAbsent((Integer) h[0], k -> new HashMap<>()).put(e.getKey(), ((Meta) h[1]).elements);
        for (int i = 0; i < newP; i++)
            for (Map.Entry<String, List<Object[]>> e : byMode.get(Mode.BROADCAST).entrySet()) {
                Object[] h = e.getValue().get(i % e.getValue().size());
                merge.get(i).computeIfAbsent((Integer) h[0], k -> new HashMap<>()).put(e.getKey(), ((Meta) h[1]).elements);
            }
        return merge;
    }

    static String q(String s) { return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\""; }
    static String arr(List<String> l) { StringBuilder b = new StringBuilder("["); for (int i = 0; i < l.size(); i++) { if (i > 0) b.append(','); b.append(q(l.get(i))); } return b.append(']').toString(); }
}
