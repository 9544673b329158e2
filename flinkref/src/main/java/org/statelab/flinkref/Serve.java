package org.statelab.flinkref;

import java.io.File;
import java.nio.file.Files;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * A live Flink for StateLab's attach tests: a MiniCluster whose REST API listens on 127.0.0.1, running a
 * scenario's job held at its input's end (the sources wait, so the job stays RUNNING and keeps
 * checkpointing) until stdin closes.
 */
final class Serve {
    private Serve() {}

    static void run(JsonNode sc) throws Exception {
        JsonNode spec = sc.path("job");
        String input = sc.path("input").asText();
        int tms = sc.path("taskManagers").asInt(1);
        int slots = sc.path("slotsPerTaskManager").asInt(4);
        Configuration conf = new Configuration();
        conf.set(RestOptions.BIND_PORT, sc.path("restPort").asText("0"));
        conf.set(RestOptions.ADDRESS, "127.0.0.1");
        conf.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
        MiniCluster mc = new MiniCluster(new MiniClusterConfiguration.Builder().setConfiguration(conf)
                .setNumTaskManagers(tms).setNumSlotsPerTaskManager(slots).build());
        mc.start();
        try {
            // Hold every partition at its end: the job never finishes.
            for (JsonNode o : spec.path("operators")) {
                if ("source".equals(o.path("kind").asText())) {
                    String id = o.path("id").asText();
                    long[] l = new long[InputStore.partitions(input, id).size()];
                    java.util.Arrays.fill(l, Long.MAX_VALUE - 1);
                    PartitionSource.limits.put(id, l);
                }
            }
            File work = Files.createTempDirectory("flinkref-serve").toFile();
            StreamExecutionEnvironment env =
                    new StreamExecutionEnvironment(Runner.jobConfig(spec, sc.path("flinkConfig"), work));
            Map<String, Integer> par = new HashMap<>();
            JobBuilder.build(env, spec, input, par);
            StreamGraph sg = env.getStreamGraph();
            sg.setJobName(spec.path("name").asText("job"));
            JobGraph jg = sg.getJobGraph();
            JobID id = jg.getJobID();
            mc.submitJob(jg).get(60, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (mc.getJobStatus(id).get() != JobStatus.RUNNING) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("job did not reach RUNNING in 60 s");
                }
                Thread.sleep(20);
            }
            // What each keyed subtask's state backend was given, once every one has opened.
            Map<String, Integer> keyed = new HashMap<>();
            for (JsonNode o : spec.path("operators")) {
                String kind = o.path("kind").asText();
                if (kind.equals("count") || kind.equals("sum")) {
                    keyed.put(o.path("id").asText(), JobBuilder.parallelismOf(o, par));
                }
            }
            Map<String, java.util.List<Map<String, Object>>> ranges = new java.util.TreeMap<>();
            while (true) {
                ranges.clear();
                for (Map<String, Object> e : Trace.events(0)) {
                    if ("open".equals(e.get("event")) && e.containsKey("keyGroups")) {
                        @SuppressWarnings("unchecked")
                        Map<String, Object> kg = (Map<String, Object>) e.get("keyGroups");
                        Map<String, Object> r = new java.util.LinkedHashMap<>();
                        r.put("subtask", e.get("subtask"));
                        r.put("start", kg.get("start"));
                        r.put("end", kg.get("end"));
                        ranges.computeIfAbsent((String) e.get("operator"), k -> new java.util.ArrayList<>()).add(r);
                    }
                }
                boolean all = keyed.entrySet().stream()
                        .allMatch(k -> ranges.getOrDefault(k.getKey(), java.util.List.of()).size() >= k.getValue());
                if (all || System.nanoTime() > deadline) {
                    break;
                }
                Thread.sleep(20);
            }
            for (java.util.List<Map<String, Object>> l : ranges.values()) {
                l.sort(java.util.Comparator.comparingInt(m -> (Integer) m.get("subtask")));
            }
            Map<String, Object> hello = new java.util.LinkedHashMap<>();
            hello.put("rest", mc.getRestAddress().get().toString());
            hello.put("job", id.toHexString());
            hello.put("keyGroups", ranges);
            System.out.println(new org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper()
                    .writeValueAsString(hello));
            System.out.flush();
            // Wait until the test closes stdin (or goes away).
            while (System.in.read() >= 0) {
                // ignore input
            }
        } finally {
            mc.closeAsync().get(60, TimeUnit.SECONDS);
        }
    }
}
