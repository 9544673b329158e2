package org.statelab.flinkref;

import java.io.File;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.SerializationFeature;

/**
 * flinkref's command line.
 *
 * <pre>
 *   run BATCH.json OUTDIR      run every scenario of BATCH ({"scenarios": [...]}) one after another in this
 *                              JVM, each on a fresh MiniCluster; write OUTDIR/NAME.json per scenario
 *   serve SCENARIO.json        start a MiniCluster with its REST API on 127.0.0.1 (port: the scenario's
 *                              restPort, 0 = any free), run the scenario's job held at its input's end so it
 *                              keeps running (and checkpointing); once every keyed subtask has opened print
 *                              one JSON line {"rest": URL, "job": ID, "keyGroups": {op: [{subtask, start,
 *                              end}]}}; stop when stdin closes
 *   savepoints OUTDIR          take canonical and native savepoints and a retained checkpoint of a job with
 *                              keyed value/list/map, operator split/union list and broadcast state (hashmap and
 *                              rocksdb) into OUTDIR/flink-VERSION/, each with metadata.json and contents.json
 * </pre>
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage();
        }
        ObjectMapper om = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
        switch (args[0]) {
            case "run" -> {
                if (args.length != 3) {
                    usage();
                }
                JsonNode batch = om.readTree(new File(args[1]));
                File out = new File(args[2]);
                out.mkdirs();
                int failed = 0;
                Runner.Pool pool = new Runner.Pool();
                for (JsonNode sc : batch.path("scenarios")) {
                    String name = sc.path("name").asText();
                    Map<String, Object> trace;
                    try {
                        trace = new Runner(sc, new File(out, "work"), pool).run();
                    } catch (Exception e) {
                        failed++;
                        trace = new LinkedHashMap<>();
                        trace.put("name", name);
                        trace.put("error", e.toString());
                        e.printStackTrace();
                    }
                    om.writeValue(new File(out, name + ".json"), trace);
                    System.out.println("flinkref: " + name + " " + (trace.containsKey("error") ? "error" : "done")
                            + " in " + trace.getOrDefault("millis", "?") + " ms");
                }
                pool.close();
                System.exit(failed == 0 ? 0 : 1);
            }
            case "serve" -> {
                if (args.length != 2) {
                    usage();
                }
                Serve.run(om.readTree(new File(args[1])));
                System.exit(0);
            }
            case "savepoints" -> {
                if (args.length != 2) {
                    usage();
                }
                SavepointData.run(new File(args[1]));
                System.exit(0);
            }
            default -> usage();
        }
    }

    private static void usage() {
        System.err.println("usage: flinkref run BATCH.json OUTDIR | flinkref serve SCENARIO.json | flinkref savepoints OUTDIR");
        System.exit(2);
    }
}
