package io.streamlet.semantics;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.GlobalKTable;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KeyValueMapper;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;

/**
 * The global table ops of the program language (tests/support/dsl_spec.py): builder.globalTable and
 * KStream-GlobalKTable join / leftJoin through a key selector ("key", or Programs.selectKey's functions).
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class GlobalTablePrograms {
    private GlobalTablePrograms() {
    }

    static boolean handles(final String kind) {
        return "globalTable".equals(kind) || "globalJoin".equals(kind) || "globalLeftJoin".equals(kind);
    }

    static KeyValueMapper keySelector(final String fn) {
        if ("key".equals(fn)) {
            return (k, v) -> k;
        }
        return (k, v) -> Programs.selectKey(fn, k, v);
    }

    static Object apply(final StreamsBuilder builder, final JsonNode op, final Object in, final Map<String, Object> vars) {
        final String kind = op.get("op").asText();
        final Named named = Programs.named(op);
        if ("globalTable".equals(kind)) {
            Consumed consumed = Consumed.with(Serdes.String(), Serdes.String());
            if (op.hasNonNull("name")) {
                consumed = consumed.withName(op.get("name").asText());
            }
            if (op.hasNonNull("store")) {
                return builder.globalTable(op.get("topic").asText(), consumed, Materialized.as(op.get("store").asText()));
            }
            return builder.globalTable(op.get("topic").asText(), consumed);
        }
        final KStream s = (KStream) in;
        final GlobalKTable t = (GlobalKTable) vars.get(op.get("table").asText());
        final KeyValueMapper selector = keySelector(op.get("key").asText());
        final org.apache.kafka.streams.kstream.ValueJoiner joiner = TablePrograms.joiner(op.get("fn").asText());
        if ("globalJoin".equals(kind)) {
            return named == null ? s.join(t, selector, joiner) : s.join(t, selector, joiner, named);
        }
        return named == null ? s.leftJoin(t, selector, joiner) : s.leftJoin(t, selector, joiner, named);
    }
}
