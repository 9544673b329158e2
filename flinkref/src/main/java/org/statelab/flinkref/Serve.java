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
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (mc.getJobStatus(id).get() != JobStatus.RUNNING) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("job did not reach RUNNING in 60 s");
                }
                Thread.sleep(20);
            }
            System.out.println("rest=" + mc.getRestAddress().get() + " job=" + id.toHexString());
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
