package org.statelab.flinkref;

import java.io.File;
import java.nio.file.Files;
import java.util.HashMap;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The main class of a project written by {@code statelab export-flink}: StateLab's job (job.json, a StateLab
 * job spec) with its input (input.json, the records each source partition holds) as a Flink DataStream job.
 *
 * <pre>
 *   ExportedJob [--job job.json] [--input input.json] [--output output] [--checkpoints DIR]
 * </pre>
 *
 * <p>Run with {@code java} it starts a local MiniCluster; with {@code flink run} it runs on that cluster (the
 * input and output paths must then be readable and writable by every TaskManager). Each sink appends the
 * records it commits to OUTPUT/SINK.jsonl.
 */
public final class ExportedJob {
    private ExportedJob() {}

    public static void main(String[] args) throws Exception {
        String job = "job.json";
        String input = "input.json";
        String output = "output";
        String checkpoints = null;
        for (int i = 0; i + 1 < args.length; i += 2) {
            switch (args[i]) {
                case "--job" -> job = args[i + 1];
                case "--input" -> input = args[i + 1];
                case "--output" -> output = args[i + 1];
                case "--checkpoints" -> checkpoints = args[i + 1];
                default -> {
                    System.err.println("unknown flag " + args[i]
                            + " (want --job FILE, --input FILE, --output DIR, --checkpoints DIR)");
                    System.exit(2);
                }
            }
        }
        JsonNode spec = new ObjectMapper().readTree(new File(job));
        File cp = checkpoints != null ? new File(checkpoints) : Files.createTempDirectory("statelab-checkpoints").toFile();
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.getExecutionEnvironment(Runner.jobConfig(spec, null, cp));
        JobBuilder.build(env, spec, new File(input).getAbsolutePath(), new HashMap<>(),
                new File(output).getAbsolutePath(), false);
        env.execute(spec.path("name").asText("statelab job"));
    }
}
