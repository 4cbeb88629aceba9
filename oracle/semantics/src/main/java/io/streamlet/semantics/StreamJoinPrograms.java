package io.streamlet.semantics;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.kstream.JoinWindows;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.StreamJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;

/**
 * KStream-KStream joins of the program language (tests/support/dsl_spec.py): "streamJoin" joins "in" with
 * "other" ("kind": join, leftJoin or outerJoin) within JoinWindows of "difference" ms (with "grace", and
 * "before" / "after" if given), with StreamJoined serdes (string keys, "vtype" / "othervtype" values) and an
 * optional "name" and "store" name.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class StreamJoinPrograms {
    private StreamJoinPrograms() {
    }

    static boolean handles(final String kind) {
        return "streamJoin".equals(kind);
    }

    static JoinWindows windows(final JsonNode op) {
        final Duration difference = Duration.ofMillis(op.get("difference").asLong());
        JoinWindows windows = op.hasNonNull("grace")
            ? JoinWindows.ofTimeDifferenceAndGrace(difference, Duration.ofMillis(op.get("grace").asLong()))
            : JoinWindows.ofTimeDifferenceWithNoGrace(difference);
        if (op.hasNonNull("before")) {
            windows = windows.before(Duration.ofMillis(op.get("before").asLong()));
        }
        if (op.hasNonNull("after")) {
            windows = windows.after(Duration.ofMillis(op.get("after").asLong()));
        }
        return windows;
    }

    static KStream apply(final JsonNode op, final Object in, final Map<String, Object> vars) {
        final KStream other = (KStream) vars.get(op.get("other").asText());
        StreamJoined joined = StreamJoined.with(Serdes.String(), Programs.serde(op.path("vtype").asText("string")),
            Programs.serde(op.path("othervtype").asText("string")));
        if (op.hasNonNull("name")) {
            joined = joined.withName(op.get("name").asText());
        }
        if (op.hasNonNull("store")) {
            joined = joined.withStoreName(op.get("store").asText());
        }
        final ValueJoiner joiner = TablePrograms.joiner(op.get("fn").asText());
        final KStream stream = (KStream) in;
        switch (op.get("kind").asText()) {
            case "join": return stream.join(other, joiner, windows(op), joined);
            case "leftJoin": return stream.leftJoin(other, joiner, windows(op), joined);
            case "outerJoin": return stream.outerJoin(other, joiner, windows(op), joined);
            default: throw new IllegalArgumentException("unknown stream join " + op.get("kind").asText());
        }
    }
}
