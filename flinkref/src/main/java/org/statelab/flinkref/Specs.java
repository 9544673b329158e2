package org.statelab.flinkref;

import java.math.BigDecimal;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;

/** Reading StateLab's spec values: durations as Go writes them ("500ms", "1m0s") or numbers of ms. */
final class Specs {
    private Specs() {}

    private static final Pattern PART = Pattern.compile("([0-9]*\\.?[0-9]+)(ns|us|µs|ms|s|m|h)");

    /** The duration n in milliseconds; def when n is missing or zero. */
    static long millis(JsonNode n, long def) {
        if (n == null || n.isMissingNode() || n.isNull()) {
            return def;
        }
        if (n.isNumber()) {
            return n.asLong() == 0 ? def : n.asLong();
        }
        String s = n.asText().trim();
        if (s.isEmpty() || s.equals("0") || s.equals("0s")) {
            return def;
        }
        if (s.matches("-?[0-9]+")) {
            return Long.parseLong(s);
        }
        Matcher m = PART.matcher(s);
        double ms = 0;
        int end = 0;
        while (m.find()) {
            if (m.start() != end) {
                throw new IllegalArgumentException("read duration " + s + ": want text like 500ms or 2s");
            }
            end = m.end();
            double v = Double.parseDouble(m.group(1));
            ms += switch (m.group(2)) {
                case "ns" -> v / 1e6;
                case "us", "µs" -> v / 1e3;
                case "ms" -> v;
                case "s" -> v * 1e3;
                case "m" -> v * 60e3;
                default -> v * 3600e3;
            };
        }
        if (end != s.length()) {
            throw new IllegalArgumentException("read duration " + s + ": want text like 500ms or 2s");
        }
        return Math.round(ms);
    }

    /** ms as Go's time.Duration.String() writes it, as StateLab's window labels do. */
    static String goDuration(long ms) {
        if (ms == 0) {
            return "0s";
        }
        String sign = ms < 0 ? "-" : "";
        ms = Math.abs(ms);
        if (ms < 1000) {
            return sign + ms + "ms";
        }
        long h = ms / 3600000;
        long m = (ms / 60000) % 60;
        BigDecimal sec = BigDecimal.valueOf(ms % 60000).movePointLeft(3).stripTrailingZeros();
        String s = sec.scale() < 0 ? sec.setScale(0).toPlainString() : sec.toPlainString();
        StringBuilder b = new StringBuilder(sign);
        if (h > 0) {
            b.append(h).append('h').append(m).append('m');
        } else if (m > 0) {
            b.append(m).append('m');
        }
        return b.append(s).append('s').toString();
    }
}
