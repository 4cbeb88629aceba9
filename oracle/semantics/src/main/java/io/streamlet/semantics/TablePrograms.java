package io.streamlet.semantics;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.ValueJoiner;

/**
 * The table ops of the program language (tests/support/dsl_spec.py): builder.table, KTable filter / filterNot /
 * mapValues (the stream ops of the same name, applied to a KTable), and KStream-KTable join / leftJoin.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class TablePrograms {
    private static final Set<String> TABLE_OPS = Set.of("filter", "filterNot", "mapValues");

    private TablePrograms() {
    }

    static boolean handles(final String kind, final Object in) {
        return "table".equals(kind) || "join".equals(kind) || "leftJoin".equals(kind)
            || (in instanceof KTable && TABLE_OPS.contains(kind));
    }

    /** Materialized.as(store) with string keys and the op's result value type ("vtype"). */
    static Materialized stored(final JsonNode op) {
        final Materialized m = Materialized.as(op.get("store").asText());
        return m.withKeySerde(Serdes.String()).withValueSerde(Programs.serde(op.path("vtype").asText("string")));
    }

    static ValueJoiner joiner(final String fn) {
        if (!"pair".equals(fn)) {
            throw new IllegalArgumentException("unknown joiner " + fn);
        }
        return (v, tv) -> String.valueOf(v) + "|" + String.valueOf(tv);
    }

    static Object apply(final StreamsBuilder builder, final JsonNode op, final Object in, final Map<String, Object> vars) {
        final String kind = op.get("op").asText();
        final Named named = Programs.named(op);
        final String fn = op.path("fn").asText(null);
        switch (kind) {
            case "table": {
                Consumed consumed = Consumed.with(Serdes.String(), Serdes.String());
                if (op.hasNonNull("name")) {
                    consumed = consumed.withName(op.get("name").asText());
                }
                if (op.hasNonNull("store")) {
                    final Materialized m = Materialized.as(op.get("store").asText());
                    return builder.table(op.get("topic").asText(), consumed,
                        m.withKeySerde(Serdes.String()).withValueSerde(Serdes.String()));
                }
                return builder.table(op.get("topic").asText(), consumed);
            }
            case "filter":
            case "filterNot": {
                final KTable t = (KTable) in;
                final boolean not = "filterNot".equals(kind);
                final org.apache.kafka.streams.kstream.Predicate p = (k, v) -> Programs.predicate(fn, k, v);
                if (op.hasNonNull("store")) {
                    final Materialized m = stored(op);
                    if (named == null) {
                        return not ? t.filterNot(p, m) : t.filter(p, m);
                    }
                    return not ? t.filterNot(p, named, m) : t.filter(p, named, m);
                }
                if (named == null) {
                    return not ? t.filterNot(p) : t.filter(p);
                }
                return not ? t.filterNot(p, named) : t.filter(p, named);
            }
            case "mapValues": {
                final KTable t = (KTable) in;
                final org.apache.kafka.streams.kstream.ValueMapper mapper = v -> Programs.mapValue(fn, v);
                if (op.hasNonNull("store")) {
                    return named == null ? t.mapValues(mapper, stored(op)) : t.mapValues(mapper, named, stored(op));
                }
                return named == null ? t.mapValues(mapper) : t.mapValues(mapper, named);
            }
            case "join":
            case "leftJoin": {
                final KStream s = (KStream) in;
                final KTable t = (KTable) vars.get(op.get("table").asText());
                Joined joined = Joined.with(Serdes.String(), Programs.serde(op.path("vtype").asText("string")), null);
                if (op.hasNonNull("name")) {
                    joined = joined.withName(op.get("name").asText());
                }
                return "join".equals(kind) ? s.join(t, joiner(fn), joined) : s.leftJoin(t, joiner(fn), joined);
            }
            default:
                throw new IllegalArgumentException("unknown table op " + kind);
        }
    }
}
