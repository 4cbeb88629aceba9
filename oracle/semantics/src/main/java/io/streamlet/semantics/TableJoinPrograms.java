package io.streamlet.semantics;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.TableJoined;
import org.apache.kafka.streams.kstream.ValueJoiner;

/**
 * KTable-KTable join / leftJoin / outerJoin of the program language (tests/support/dsl_spec.py): "join",
 * "leftJoin" or "outerJoin" whose "in" is a KTable, joined with the KTable "table" by the joiner "fn"; with a
 * "store", materialized. With a foreign-key extractor "fk", a foreign-key "join" / "leftJoin" (KIP-213), its
 * name given as TableJoined.as(name).
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class TableJoinPrograms {
    private TableJoinPrograms() {
    }

    static boolean handles(final String kind, final Object in) {
        return in instanceof KTable && ("join".equals(kind) || "leftJoin".equals(kind) || "outerJoin".equals(kind));
    }

    static Object apply(final JsonNode op, final Object in, final Map<String, Object> vars) {
        final String kind = op.get("op").asText();
        final KTable t = (KTable) in;
        final KTable other = (KTable) vars.get(op.get("table").asText());
        final ValueJoiner joiner = TablePrograms.joiner(op.path("fn").asText(null));
        if (op.hasNonNull("fk")) {
            return foreignKeyJoin(op, kind, t, other, joiner);
        }
        final Named named = Programs.named(op);
        if (op.hasNonNull("store")) {  // materialized: Materialized.as(store) with string keys and values
            final Materialized m = TablePrograms.stored(op);
            switch (kind) {
                case "join": return named == null ? t.join(other, joiner, m) : t.join(other, joiner, named, m);
                case "leftJoin": return named == null ? t.leftJoin(other, joiner, m) : t.leftJoin(other, joiner, named, m);
                default: return named == null ? t.outerJoin(other, joiner, m) : t.outerJoin(other, joiner, named, m);
            }
        }
        switch (kind) {
            case "join": return named == null ? t.join(other, joiner) : t.join(other, joiner, named);
            case "leftJoin": return named == null ? t.leftJoin(other, joiner) : t.leftJoin(other, joiner, named);
            default: return named == null ? t.outerJoin(other, joiner) : t.outerJoin(other, joiner, named);
        }
    }

    /**
     * "prefix": the value's part before ':' (none without one); "key_or_prefix" (a BiFunction): that, or the key;
     * "first_word": the value's first word (none for an empty value).
     */
    private static KTable foreignKeyJoin(final JsonNode op, final String kind, final KTable t, final KTable other,
                                         final ValueJoiner joiner) {
        final boolean left = "leftJoin".equals(kind);
        final TableJoined joined = op.hasNonNull("name") ? TableJoined.as(op.get("name").asText()) : TableJoined.with(null, null);
        final Materialized m = op.hasNonNull("store") ? TablePrograms.stored(op) : Materialized.with(null, null);
        switch (op.get("fk").asText()) {
            case "prefix": {
                final Function<String, String> fk = v -> v.contains(":") ? v.substring(0, v.indexOf(':')) : null;
                return left ? t.leftJoin(other, fk, joiner, joined, m) : t.join(other, fk, joiner, joined, m);
            }
            case "key_or_prefix": {
                final BiFunction<String, String, String> fk = (k, v) -> v.contains(":") ? v.substring(0, v.indexOf(':')) : k;
                return left ? t.leftJoin(other, fk, joiner, joined, m) : t.join(other, fk, joiner, joined, m);
            }
            case "first_word": {
                final Function<String, String> fk = v -> v.split(" ")[0].isEmpty() ? null : v.split(" ")[0];
                return left ? t.leftJoin(other, fk, joiner, joined, m) : t.join(other, fk, joiner, joined, m);
            }
            default:
                throw new IllegalArgumentException("unknown foreign-key extractor " + op.get("fk").asText());
        }
    }
}
