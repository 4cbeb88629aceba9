package io.streamlet.semantics;

import com.fasterxml.jackson.databind.JsonNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.serialization.Serde;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.KGroupedStream;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Named;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.SessionWindowedKStream;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.SlidingWindows;
import org.apache.kafka.streams.kstream.TimeWindowedKStream;
import org.apache.kafka.streams.kstream.TimeWindows;
import org.apache.kafka.streams.kstream.WindowedSerdes;
import org.apache.kafka.streams.processor.Cancellable;
import org.apache.kafka.streams.processor.PunctuationType;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.ProcessorSupplier;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * Builds a DSL program given as a JSON op list (the spec of tests/support/dsl_spec.py) on a StreamsBuilder.
 * Keys are strings; values are strings or longs ("vtype"). Every function is named from a small fixed
 * vocabulary, defined identically on the Python side.
 */
@SuppressWarnings({"unchecked", "rawtypes"})
final class Programs {
    private Programs() {
    }

    static Serde serde(final String type) {
        return "long".equals(type) ? Serdes.Long() : Serdes.String();
    }

    static List<String> words(final Object v) {
        final List<String> out = new ArrayList<>();
        if (v == null) {
            return out;
        }
        for (final String w : ((String) v).split(" ")) {
            if (!w.isEmpty()) {
                out.add(w);
            }
        }
        return out;
    }

    static String first(final Object v) {
        final String s = (String) v;
        if (s == null) {
            return null;
        }
        return s.isEmpty() ? "" : s.substring(0, 1);
    }

    // Every function takes null values (false, null, or the aggregate unchanged); string concatenation
    // appends "null", as Java's does.
    static boolean predicate(final String fn, final Object k, final Object v) {
        if (v == null) {
            return false;
        }
        switch (fn) {
            case "short": return ((String) v).length() <= 3;
            case "has_a": return ((String) v).contains("a");
            case "even": return ((Long) v) % 2 == 0;
            default: throw new IllegalArgumentException("unknown predicate " + fn);
        }
    }

    static Object mapValue(final String fn, final Object v) {
        if (v == null) {
            return null;
        }
        switch (fn) {
            case "upper": return ((String) v).toUpperCase();
            case "first": return first(v);
            case "dup": return (String) v + v;
            case "length": return (long) ((String) v).length();
            case "str": return String.valueOf(v);
            case "inc": return (Long) v + 1;
            case "fail_x_or_2":  // for the processing exception handler: raises on "x" and on 2, else the value
                if ("x".equals(v) || Long.valueOf(2).equals(v)) {
                    throw new IllegalStateException("fail_x_or_2 refuses " + v);
                }
                return v;
            default: throw new IllegalArgumentException("unknown value mapper " + fn);
        }
    }

    static Object selectKey(final String fn, final Object k, final Object v) {
        switch (fn) {
            case "value": return v;
            case "first": return first(v);
            case "const": return "k";
            default: throw new IllegalArgumentException("unknown key selector " + fn);
        }
    }

    static Object reduce(final String fn, final Object agg, final Object v) {
        switch (fn) {
            case "concat": return (String) agg + v;
            case "max": return v == null || ((String) agg).compareTo((String) v) >= 0 ? agg : v;
            case "sum": return v == null ? agg : (Object) ((Long) agg + (Long) v);
            default: throw new IllegalArgumentException("unknown reducer " + fn);
        }
    }

    static Object init(final String fn) {
        return "append".equals(fn) ? "" : (Object) 0L;
    }

    static Object aggregate(final String fn, final Object k, final Object v, final Object agg) {
        switch (fn) {
            case "append": return (String) agg + v;
            case "len_sum": return v == null ? agg : (Object) ((Long) agg + ((String) v).length());
            case "sum": return v == null ? agg : (Object) ((Long) agg + (Long) v);
            default: throw new IllegalArgumentException("unknown aggregator " + fn);
        }
    }

    /**
     * The "counting" processor: forwards every record and counts them; every "interval" ms of stream or
     * wall-clock time ("ptype") it forwards ("punct", count) with the punctuation time, and cancels its
     * schedule after "cancel_after" punctuations (if given).
     */
    static final class CountingProcessor implements Processor<Object, Object, Object, Object> {
        private final long interval;
        private final PunctuationType type;
        private final long cancelAfter;
        private ProcessorContext<Object, Object> context;
        private Cancellable schedule;
        private long count;
        private long fired;

        CountingProcessor(final long interval, final PunctuationType type, final long cancelAfter) {
            this.interval = interval;
            this.type = type;
            this.cancelAfter = cancelAfter;
        }

        @Override
        public void init(final ProcessorContext<Object, Object> context) {
            this.context = context;
            schedule = context.schedule(Duration.ofMillis(interval), type, timestamp -> {
                fired++;
                context.forward(new Record<>("punct", String.valueOf(count), timestamp));
                if (cancelAfter > 0 && fired >= cancelAfter) {
                    schedule.cancel();
                }
            });
        }

        @Override
        public void process(final Record<Object, Object> record) {
            count++;
            context.forward(record);
        }
    }

    static Suppressed suppressed(final JsonNode op) {
        final String buffer = op.path("buffer").asText("unbounded");
        Suppressed.BufferConfig config;
        switch (buffer) {
            case "unbounded": config = Suppressed.BufferConfig.unbounded(); break;
            case "max_records": config = Suppressed.BufferConfig.maxRecords(op.get("limit").asLong()); break;
            case "max_bytes": config = Suppressed.BufferConfig.maxBytes(op.get("limit").asLong()); break;
            default: throw new IllegalArgumentException("unknown buffer " + buffer);
        }
        if ("shut_down".equals(op.path("when_full").asText(null))) {
            config = config.shutDownWhenFull();
        } else if ("emit".equals(op.path("when_full").asText(null))) {
            config = config.emitEarlyWhenFull();
        }
        if (op.has("logging") && !op.get("logging").asBoolean()) {
            config = (Suppressed.BufferConfig) config.withLoggingDisabled();
        }
        final Suppressed result = "window_close".equals(op.get("until").asText())
            ? Suppressed.untilWindowCloses((Suppressed.StrictBufferConfig) config)
            : Suppressed.untilTimeLimit(Duration.ofMillis(op.get("wait").asLong()), config);
        return op.hasNonNull("name") ? result.withName(op.get("name").asText()) : result;
    }

    // a session aggregate's merger: the two aggregates added (concatenated for strings)
    static Object merge(final String fn, final Object agg1, final Object agg2) {
        return "append".equals(fn) ? (Object) ((String) agg1 + agg2) : (Object) ((Long) agg1 + (Long) agg2);
    }

    static Named named(final JsonNode op) {
        return op.hasNonNull("name") ? Named.as(op.get("name").asText()) : null;
    }

    static Materialized materialized(final JsonNode op, final String vtype) {
        final Materialized m = op.hasNonNull("store")
            ? Materialized.as(op.get("store").asText())
            : Materialized.with(null, null);
        return m.withKeySerde(Serdes.String()).withValueSerde(serde(vtype));
    }

    static void build(final StreamsBuilder builder, final JsonNode program) {
        final Map<String, Object> vars = new HashMap<>();
        for (final JsonNode op : program) {
            final String kind = op.get("op").asText();
            final Object in = op.has("in") ? vars.get(op.get("in").asText()) : null;
            final Named named = named(op);
            final String fn = op.path("fn").asText(null);
            final String vtype = op.path("vtype").asText("string");
            Object result = null;
            if (GlobalTablePrograms.handles(kind)) {  // global tables and their joins: GlobalTablePrograms.java
                vars.put(op.get("id").asText(), GlobalTablePrograms.apply(builder, op, in, vars));
                continue;
            }
            if (TableJoinPrograms.handles(kind, in)) {  // KTable-KTable joins
                vars.put(op.get("id").asText(), TableJoinPrograms.apply(op, in, vars));
                continue;
            }
            if (GroupedTablePrograms.handles(kind, in)) {  // KTable groupBy and its aggregations
                vars.put(op.get("id").asText(), GroupedTablePrograms.apply(op, in));
                continue;
            }
            if (TablePrograms.handles(kind, in)) {  // tables and joins: TablePrograms.java
                vars.put(op.get("id").asText(), TablePrograms.apply(builder, op, in, vars));
                continue;
            }
            if (StreamJoinPrograms.handles(kind)) {  // stream-stream joins: StreamJoinPrograms.java
                vars.put(op.get("id").asText(), StreamJoinPrograms.apply(op, in, vars));
                continue;
            }
            if (BranchPrograms.handles(kind)) {  // split and merge: BranchPrograms.java
                BranchPrograms.apply(op, in, vars);
                continue;
            }
            switch (kind) {
                case "stream": {
                    final List<String> topics = new ArrayList<>();
                    op.get("topics").forEach(t -> topics.add(t.asText()));
                    Consumed consumed = Consumed.with(Serdes.String(), Serdes.String());
                    if (op.hasNonNull("name")) {
                        consumed = consumed.withName(op.get("name").asText());
                    }
                    result = builder.stream(topics, consumed);
                    break;
                }
                case "filter": {
                    final KStream s = (KStream) in;
                    result = named == null ? s.filter((k, v) -> predicate(fn, k, v))
                        : s.filter((k, v) -> predicate(fn, k, v), named);
                    break;
                }
                case "filterNot": {
                    final KStream s = (KStream) in;
                    result = named == null ? s.filterNot((k, v) -> predicate(fn, k, v))
                        : s.filterNot((k, v) -> predicate(fn, k, v), named);
                    break;
                }
                case "mapValues": {
                    final KStream s = (KStream) in;
                    result = named == null ? s.mapValues(v -> mapValue(fn, v)) : s.mapValues(v -> mapValue(fn, v), named);
                    break;
                }
                case "flatMapValues": {
                    final KStream s = (KStream) in;
                    result = named == null ? s.flatMapValues(v -> words(v)) : s.flatMapValues(v -> words(v), named);
                    break;
                }
                case "selectKey": {
                    final KStream s = (KStream) in;
                    result = named == null ? s.selectKey((k, v) -> selectKey(fn, k, v))
                        : s.selectKey((k, v) -> selectKey(fn, k, v), named);
                    break;
                }
                case "map": {
                    final KStream s = (KStream) in;
                    final org.apache.kafka.streams.kstream.KeyValueMapper m =
                        (k, v) -> KeyValue.pair(v, String.valueOf(k));
                    result = named == null ? s.map(m) : s.map(m, named);
                    break;
                }
                case "flatMap": {
                    final KStream s = (KStream) in;
                    final org.apache.kafka.streams.kstream.KeyValueMapper m = (k, v) -> {
                        final List<KeyValue<Object, Object>> out = new ArrayList<>();
                        for (final String w : words(v)) {
                            out.add(KeyValue.pair(w, v));
                        }
                        return out;
                    };
                    result = named == null ? s.flatMap(m) : s.flatMap(m, named);
                    break;
                }
                case "peek": {
                    final KStream s = (KStream) in;
                    result = named == null ? s.peek((k, v) -> { }) : s.peek((k, v) -> { }, named);
                    break;
                }
                case "to": {
                    Serde keySerde = op.hasNonNull("wsize")
                        ? new WindowedSerdes.TimeWindowedSerde<>(Serdes.String(), op.get("wsize").asLong())
                        : Serdes.String();
                    if (op.path("session").asBoolean(false)) {
                        keySerde = new WindowedSerdes.SessionWindowedSerde<>(Serdes.String());
                    }
                    Produced produced = Produced.with(keySerde, serde(vtype));
                    if (op.hasNonNull("name")) {
                        produced = produced.withName(op.get("name").asText());
                    }
                    ((KStream) in).to(op.get("topic").asText(), produced);
                    break;
                }
                case "groupBy": {
                    Grouped grouped = Grouped.with(Serdes.String(), serde(vtype));
                    if (op.hasNonNull("name")) {
                        grouped = grouped.withName(op.get("name").asText());
                    }
                    result = ((KStream) in).groupBy((k, v) -> selectKey(fn, k, v), grouped);
                    break;
                }
                case "groupByKey": {
                    Grouped grouped = Grouped.with(Serdes.String(), serde(vtype));
                    if (op.hasNonNull("name")) {
                        grouped = grouped.withName(op.get("name").asText());
                    }
                    result = ((KStream) in).groupByKey(grouped);
                    break;
                }
                case "windowedBy": {
                    final Duration size = Duration.ofMillis(op.get("size").asLong());
                    TimeWindows windows = op.hasNonNull("grace")
                        ? TimeWindows.ofSizeAndGrace(size, Duration.ofMillis(op.get("grace").asLong()))
                        : TimeWindows.ofSizeWithNoGrace(size);
                    if (op.hasNonNull("advance")) {
                        windows = windows.advanceBy(Duration.ofMillis(op.get("advance").asLong()));
                    }
                    result = ((KGroupedStream) in).windowedBy(windows);
                    break;
                }
                case "sessionWindowedBy": {
                    final Duration gap = Duration.ofMillis(op.get("gap").asLong());
                    result = ((KGroupedStream) in).windowedBy(op.hasNonNull("grace")
                        ? SessionWindows.ofInactivityGapAndGrace(gap, Duration.ofMillis(op.get("grace").asLong()))
                        : SessionWindows.ofInactivityGapWithNoGrace(gap));
                    break;
                }
                case "slidingWindowedBy": {
                    final Duration difference = Duration.ofMillis(op.get("difference").asLong());
                    result = ((KGroupedStream) in).windowedBy(op.hasNonNull("grace")
                        ? SlidingWindows.ofTimeDifferenceAndGrace(difference, Duration.ofMillis(op.get("grace").asLong()))
                        : SlidingWindows.ofTimeDifferenceWithNoGrace(difference));
                    break;
                }
                case "count": {
                    if (in instanceof SessionWindowedKStream) {
                        final SessionWindowedKStream w = (SessionWindowedKStream) in;
                        if (!op.hasNonNull("store")) {
                            result = named == null ? w.count() : w.count(named);
                        } else {
                            final Materialized m = materialized(op, "long");
                            result = named == null ? w.count(m) : w.count(named, m);
                        }
                        break;
                    }
                    if (in instanceof TimeWindowedKStream) {
                        final TimeWindowedKStream w = (TimeWindowedKStream) in;
                        if (!op.hasNonNull("store")) {
                            result = named == null ? w.count() : w.count(named);
                        } else {
                            final Materialized m = materialized(op, "long");
                            result = named == null ? w.count(m) : w.count(named, m);
                        }
                        break;
                    }
                    final KGroupedStream g = (KGroupedStream) in;
                    if (!op.hasNonNull("store")) {
                        // count(Materialized) without a store name burns a name (Kafka keeps it for
                        // compatibility); streamlet's count() is Kafka's count(), which takes the grouped serdes
                        result = named == null ? g.count() : g.count(named);
                        break;
                    }
                    final Materialized m = materialized(op, "long");
                    result = named == null ? g.count(m) : g.count(named, m);
                    break;
                }
                case "reduce": {
                    if (in instanceof SessionWindowedKStream) {
                        final SessionWindowedKStream w = (SessionWindowedKStream) in;
                        final Materialized m = materialized(op, vtype);
                        result = named == null ? w.reduce((a, v) -> reduce(fn, a, v), m)
                            : w.reduce((a, v) -> reduce(fn, a, v), named, m);
                        break;
                    }
                    if (in instanceof TimeWindowedKStream) {
                        final TimeWindowedKStream w = (TimeWindowedKStream) in;
                        final Materialized m = materialized(op, vtype);
                        result = named == null ? w.reduce((a, v) -> reduce(fn, a, v), m)
                            : w.reduce((a, v) -> reduce(fn, a, v), named, m);
                        break;
                    }
                    final KGroupedStream g = (KGroupedStream) in;
                    final Materialized m = materialized(op, vtype);
                    result = named == null ? g.reduce((a, v) -> reduce(fn, a, v), m)
                        : g.reduce((a, v) -> reduce(fn, a, v), named, m);
                    break;
                }
                case "aggregate": {
                    if (in instanceof SessionWindowedKStream) {
                        final SessionWindowedKStream w = (SessionWindowedKStream) in;
                        final Materialized m = materialized(op, vtype);
                        result = named == null
                            ? w.aggregate(() -> init(fn), (k, v, a) -> aggregate(fn, k, v, a), (k, a, b) -> merge(fn, a, b), m)
                            : w.aggregate(() -> init(fn), (k, v, a) -> aggregate(fn, k, v, a), (k, a, b) -> merge(fn, a, b),
                                named, m);
                        break;
                    }
                    if (in instanceof TimeWindowedKStream) {
                        final TimeWindowedKStream w = (TimeWindowedKStream) in;
                        final Materialized m = materialized(op, vtype);
                        result = named == null ? w.aggregate(() -> init(fn), (k, v, a) -> aggregate(fn, k, v, a), m)
                            : w.aggregate(() -> init(fn), (k, v, a) -> aggregate(fn, k, v, a), named, m);
                        break;
                    }
                    final KGroupedStream g = (KGroupedStream) in;
                    final Materialized m = materialized(op, vtype);
                    result = named == null ? g.aggregate(() -> init(fn), (k, v, a) -> aggregate(fn, k, v, a), m)
                        : g.aggregate(() -> init(fn), (k, v, a) -> aggregate(fn, k, v, a), named, m);
                    break;
                }
                case "suppress": {
                    result = ((KTable) in).suppress(suppressed(op));
                    break;
                }
                case "process": {
                    final long interval = op.get("interval").asLong();
                    final PunctuationType type = "wall".equals(op.get("ptype").asText())
                        ? PunctuationType.WALL_CLOCK_TIME : PunctuationType.STREAM_TIME;
                    final long cancelAfter = op.path("cancel_after").asLong(0);
                    final ProcessorSupplier supplier = () -> new CountingProcessor(interval, type, cancelAfter);
                    final KStream s = (KStream) in;
                    result = named == null ? s.process(supplier) : s.process(supplier, named);
                    break;
                }
                case "toStream": {
                    final KTable t = (KTable) in;  // a windowed table's keys are Windowed
                    result = named == null ? t.toStream() : t.toStream(named);
                    break;
                }
                default:
                    throw new IllegalArgumentException("unknown op " + kind);
            }
            if (op.has("id")) {
                vars.put(op.get("id").asText(), result);
            }
        }
    }
}
