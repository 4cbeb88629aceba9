package io.streamlet.semantics;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedTable;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;

/**
 * KTable groupBy and the grouped table's count / reduce / aggregate (with a subtractor "sub") of the program
 * language (tests/support/dsl_spec.py): "groupBy" on a KTable, then "count" / "reduce" / "aggregate" on it.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class GroupedTablePrograms {
    private GroupedTablePrograms() {
    }

    static boolean handles(final String kind, final Object in) {
        return in instanceof KGroupedTable || ("groupBy".equals(kind) && in instanceof KTable);
    }

    /** The (group key, value) of a row; a null key or value drops the row from every group. */
    static KeyValue<Object, Object> select(final String fn, final Object k, final Object v) {
        switch (fn) {
            case "key": return KeyValue.pair(k, v);
            case "const": return KeyValue.pair("k", v);
            case "first": return KeyValue.pair(Programs.first(v), v);
            case "swap": return KeyValue.pair(v, k);
            case "long_only": return KeyValue.pair(((String) v).length() > 2 ? v : null, v);
            case "value_as_key": return KeyValue.pair(String.valueOf(v), k);
            case "parity": return KeyValue.pair(((Long) v) % 2 == 0 ? "even" : null, v);
            default: throw new IllegalArgumentException("unknown table key selector " + fn);
        }
    }

    static String remove(final Object agg, final Object v) {
        final String s = (String) agg;
        final int i = s.indexOf((String) v);
        return i < 0 ? s : s.substring(0, i) + s.substring(i + ((String) v).length());
    }

    static Object subtract(final String fn, final Object v, final Object agg) {
        switch (fn) {
            case "remove": return remove(agg, v);
            case "len_sub": return (Long) agg - ((String) v).length();
            case "minus": return (Long) agg - (Long) v;
            default: throw new IllegalArgumentException("unknown subtractor " + fn);
        }
    }

    static Object apply(final JsonNode op, final Object in) {
        final String kind = op.get("op").asText();
        final Named named = Programs.named(op);
        final String fn = op.path("fn").asText(null);
        final String sub = op.path("sub").asText(null);
        final String vtype = op.path("vtype").asText("string");
        if ("groupBy".equals(kind)) {
            Grouped grouped = Grouped.with(Serdes.String(), Programs.serde(vtype));
            if (op.hasNonNull("name")) {
                grouped = grouped.withName(op.get("name").asText());
            }
            return ((KTable) in).groupBy((k, v) -> select(fn, k, v), grouped);
        }
        final KGroupedTable g = (KGroupedTable) in;
        switch (kind) {
            case "count": {
                final Materialized m = Programs.materialized(op, "long");
                if (!op.hasNonNull("store")) {
                    return named == null ? g.count() : g.count(named);
                }
                return named == null ? g.count(m) : g.count(named, m);
            }
            case "reduce": {
                final Materialized m = Programs.materialized(op, vtype);
                final org.apache.kafka.streams.kstream.Reducer adder = (a, v) -> Programs.reduce(fn, a, v);
                final org.apache.kafka.streams.kstream.Reducer subtractor = (a, v) -> subtract(sub, v, a);
                return named == null ? g.reduce(adder, subtractor, m) : g.reduce(adder, subtractor, named, m);
            }
            case "aggregate": {
                final Materialized m = Programs.materialized(op, vtype);
                return named == null
                    ? g.aggregate(() -> Programs.init(fn), (k, v, a) -> Programs.aggregate(fn, k, v, a),
                        (k, v, a) -> subtract(sub, v, a), m)
                    : g.aggregate(() -> Programs.init(fn), (k, v, a) -> Programs.aggregate(fn, k, v, a),
                        (k, v, a) -> subtract(sub, v, a), named, m);
            }
            default:
                throw new IllegalArgumentException("unknown grouped table op " + kind);
        }
    }
}
