"""A small language of DSL programs that both streamlet and Kafka Streams can build (the oracle's input).

A program is a JSON list of ops, each reading the variable `in` and defining the variable `id`:

    {"op": "stream", "id": "s0", "topics": ["in1"], "name": null}
    {"op": "filter" | "filterNot", "in": "s0", "id": "s1", "fn": "short" | "has_a" | "even"}
    {"op": "mapValues", "fn": "upper" | "first" | "dup" | "length" | "str" | "inc" | "fail_x_or_2"}
    {"op": "flatMapValues", "fn": "words"}     {"op": "selectKey", "fn": "value" | "first" | "const"}
    {"op": "map", "fn": "swap"}               {"op": "flatMap", "fn": "words_as_keys"}    {"op": "peek"}
    {"op": "to", "topic": "out1", "vtype": "string" | "long"}
    {"op": "groupBy", "fn": <key selector>, "vtype": ...}   {"op": "groupByKey", "vtype": ...}
    {"op": "count", "store": null | "name"}
    {"op": "reduce", "fn": "concat" | "max" | "sum", "vtype": ...}
    {"op": "aggregate", "fn": "append" | "len_sum" | "sum", "vtype": <the aggregate's type>}
    {"op": "toStream"}
    {"op": "windowedBy", "in": <grouped>, "size": ms, "grace": null | ms, "advance": null | ms}
    (then count/reduce/aggregate on it give a windowed table; `to` a windowed stream with "wsize": size)
    {"op": "suppress", "in": <table>, "until": "window_close" | "time_limit", "wait": ms (time_limit),
     "buffer": "unbounded" | "max_records" | "max_bytes", "limit": n, "when_full": null | "emit" | "shut_down",
     "logging": false (withLoggingDisabled; default: logged)}
    {"op": "process", "in": <stream>, "interval": ms, "ptype": "stream" | "wall", "cancel_after": null | n}
    (the "counting" processor: forwards each record, and every interval forwards ("punct", <records seen>))
    {"op": "table", "id": "t", "topic": "tin1", "store": null | "name"}     (string keys and values)
    {"op": "filter" | "filterNot" | "mapValues", "in": <table>, ..., "store": null | "name", "vtype": ...}
                                  (the KTable operations; with a store, materialized with values of "vtype")
    {"op": "join" | "leftJoin", "in": <stream>, "table": <table>, "fn": "pair", "vtype": <stream's value type>}
    {"op": "split", "in": <stream>, "name": <prefix>, "branches": [{"fn": <predicate>, "name": null | "b"}, ...],
     "default": null | {"name": null | "d"}, "ids": [<one per branch, then the default branch>]}
    {"op": "merge", "in": <stream>, "other": <stream>, "id": ...}
    {"op": "sessionWindowedBy", "in": <grouped>, "gap": ms, "grace": null | ms}
    (aggregate merges sessions with the merger named like its "fn"; `to` a session stream with "session": true)
    {"op": "globalTable", "id": "g", "topic": "gin1", "store": null | "name"}     (string keys and values)
    {"op": "globalJoin" | "globalLeftJoin", "in": <stream>, "table": <global table>, "key": "key" | <key
     selector>, "fn": "pair"}     (KStream-GlobalKTable joins: GLOBAL_KEY_SELECTORS maps records to table keys)
    {"op": "slidingWindowedBy", "in": <grouped>, "difference": ms, "grace": null | ms}
    (`to` a sliding-windowed stream with "wsize": difference)
    {"op": "streamJoin", "in": <stream>, "other": <stream>, "kind": "join" | "leftJoin" | "outerJoin", "fn": "pair",
     "difference": ms, "grace": null | ms, "before": null | ms, "after": null | ms, "store": null | "name",
     "vtype": <in's value type>, "othervtype": <other's value type>}   (JoinWindows, StreamJoined)

    {"op": "join" | "leftJoin" | "outerJoin", "in": <table>, "table": <table>, "fn": "pair", "store": null | name}
    {"op": "join" | "leftJoin", "in": <table>, "table": <table>, "fk": <FOREIGN_KEY_EXTRACTORS>, "fn": "pair",
     "store": null | name}      (foreign-key joins; "name" is TableJoined.as(name))
    {"op": "groupBy", "in": <table>, "fn": <table key selector>, "vtype": ...}      (KTable#groupBy; then
    "count", "reduce" / "aggregate" with a subtractor "sub": "remove" | "len_sub" | "minus" on the grouped table)

Any op may have a processor `name` (Kafka's `Named`/`Grouped`/`Consumed`/`Produced` names). Keys are
strings (or null); values are strings or longs, and every serde is explicit on both sides, so output bytes
are comparable. `oracle/semantics/.../Programs.java` is the Java twin of `build()`; each named function is
defined the same way in both (`FUNCTIONS` here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.runtime.punctuation import Cancellable, PunctuationType
from streamlet.serdes import StringSerde
from streamlet.topology import (
    Branched,
    KGroupedStream,
    KGroupedTable,
    KStream,
    KTable,
    SessionWindowedKStream,
    StreamsBuilder,
    TimeWindowedKStream,
)
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from streamlet.topology.session_windows import SessionWindowedSerde, SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.suppressed import BufferConfig, Suppressed
from streamlet.topology.timestamps import ConsumedRecord
from streamlet.topology.windows import TimeWindowedSerde, TimeWindows


def words(value: str | None) -> list[str]:
    """Java's `v.split(" ")` without the empty strings (none for a null value)."""
    return [] if value is None else [w for w in value.split(" ") if w]


def _first(value: str | None) -> str | None:
    return None if value is None else value[:1]


def _java_str(obj: Any) -> str:
    return "null" if obj is None else str(obj)


def _on_values(fn: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A value mapper that passes null values through (Programs.mapValue)."""
    return lambda v: None if v is None else fn(v)


def _fail_x_or_2(value: Any) -> Any:
    if value == "x" or (type(value) is int and value == 2):
        raise ValueError(f"fail_x_or_2 refuses {value!r}")
    return value


# Every function takes null values (false, null, or the aggregate unchanged); string concatenation appends
# "null", as Java's does.
PREDICATES: dict[str, Callable[[Any, Any], bool]] = {
    "short": lambda k, v: v is not None and len(v) <= 3,
    "has_a": lambda k, v: v is not None and "a" in v,
    "even": lambda k, v: v is not None and v % 2 == 0,
}
VALUE_MAPPERS: dict[str, Callable[[Any], Any]] = {
    "upper": _on_values(str.upper),
    "first": _first,
    "dup": _on_values(lambda v: v + v),
    "length": _on_values(len),
    "str": _on_values(str),
    "inc": _on_values(lambda v: v + 1),
    "fail_x_or_2": _on_values(_fail_x_or_2),  # for the processing exception handler
}
KEY_SELECTORS: dict[str, Callable[[Any, Any], Any]] = {
    "value": lambda k, v: v,
    "first": lambda k, v: _first(v),
    "const": lambda k, v: "k",
}
REDUCERS: dict[str, Callable[[Any, Any], Any]] = {
    "concat": lambda agg, v: agg + _java_str(v),
    "max": lambda agg, v: agg if v is None or agg >= v else v,
    "sum": lambda agg, v: agg if v is None else agg + v,
}
JOINERS: dict[str, Callable[[Any, Any], Any]] = {"pair": lambda v, tv: _java_str(v) + "|" + _java_str(tv)}


def _prefix(value: str) -> str | None:
    return value[: value.index(":")] if ":" in value else None


#: foreign-key extractors: "prefix" of the value (a Function), "key_or_prefix" of key and value (a BiFunction),
#: "first_word" of the value (none for an empty one)
FOREIGN_KEY_EXTRACTORS: dict[str, Callable[..., Any]] = {
    "prefix": lambda v: _prefix(v),
    "key_or_prefix": lambda k, v: k if _prefix(v) is None else _prefix(v),
    "first_word": lambda v: v.split(" ")[0] or None,
}
INITIALIZERS: dict[str, Callable[[], Any]] = {"append": lambda: "", "len_sum": lambda: 0, "sum": lambda: 0}
AGGREGATORS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "append": lambda k, v, agg: agg + _java_str(v),
    "len_sum": lambda k, v, agg: agg if v is None else agg + len(v),
    "sum": lambda k, v, agg: agg if v is None else agg + v,
}
#: session aggregates' mergers, named after their aggregator: the two aggregates added (Programs.merge)
MERGERS: dict[str, Callable[[Any, Any, Any], Any]] = {
    "append": lambda k, agg1, agg2: agg1 + agg2,
    "len_sum": lambda k, agg1, agg2: agg1 + agg2,
    "sum": lambda k, agg1, agg2: agg1 + agg2,
}

#: value types of the functions that change them (others keep their input's type)
STRING_TO_STRING = ("upper", "first", "dup")
RESULT_TYPE = {"length": "long", "str": "string", "inc": "long", "append": "string", "len_sum": "long"}


def payload_timestamp(record: ConsumedRecord, partition_time: int) -> int:
    """The case language's "payload" timestamp extractor (Java twin: PayloadTimestampExtractor): a value
    "@<digits>" is its own timestamp, "drop" gives -1 (the record is skipped), "now" the partition time."""
    value = record.value
    if isinstance(value, str):
        if len(value) > 1 and value[0] == "@" and value[1:].isascii() and value[1:].isdigit():
            return int(value[1:])
        if value == "drop":
            return -1
        if value == "now":
            return partition_time
    return record.timestamp


#: extractors a case's config may name
EXTRACTORS = {"payload": payload_timestamp}


def counting_processor(interval: int, ptype: str, cancel_after: int | None) -> Callable[[Any], Any]:
    """The "counting" processor (Java twin: Programs.CountingProcessor)."""
    punctuation_type = PunctuationType.WALL_CLOCK_TIME if ptype == "wall" else PunctuationType.STREAM_TIME

    def factory(context: Any) -> Callable[[Any, Any], None]:
        state = {"count": 0, "fired": 0}
        schedule: list[Cancellable] = []

        def punctuate(timestamp: int) -> None:
            state["fired"] += 1
            context.forward("punct", str(state["count"]), timestamp=timestamp)
            if cancel_after and state["fired"] >= cancel_after:
                schedule[0].cancel()

        schedule.append(context.schedule(interval, punctuation_type, punctuate))

        def process(key: Any, value: Any) -> None:
            state["count"] += 1
            context.forward(key, value)

        return process

    return factory


def suppressed(op: dict[str, Any]) -> Suppressed:
    buffer = op.get("buffer", "unbounded")
    if buffer == "unbounded":
        config = BufferConfig.unbounded()
    elif buffer == "max_records":
        config = BufferConfig.max_records(op["limit"])
    else:
        config = BufferConfig.max_bytes(op["limit"])
    if op.get("when_full") == "shut_down":
        config = config.shut_down_when_full()
    elif op.get("when_full") == "emit":
        config = config.emit_early_when_full()
    if op.get("logging") is False:
        config = config.with_logging_disabled()
    if op["until"] == "window_close":
        result = Suppressed.until_window_closes(config)
    else:
        result = Suppressed.until_time_limit(op["wait"], config)
    return result if op.get("name") is None else result.with_name(op["name"])


def stream_join(source: KStream, other: KStream, op: dict[str, Any]) -> KStream:
    """A "streamJoin" op (Java twin: StreamJoinPrograms.java)."""
    if op.get("grace") is None:
        windows = JoinWindows.of_time_difference_with_no_grace(op["difference"])
    else:
        windows = JoinWindows.of_time_difference_and_grace(op["difference"], op["grace"])
    if op.get("before") is not None:
        windows = windows.before(op["before"])
    if op.get("after") is not None:
        windows = windows.after(op["after"])
    joined = StreamJoined.with_("str", serde(op.get("vtype", "string")), serde(op.get("othervtype", "string")))
    if op.get("name") is not None:
        joined = joined.with_name(op["name"])
    if op.get("store") is not None:
        joined = joined.with_store_name(op["store"])
    join = {"join": source.join, "leftJoin": source.left_join, "outerJoin": source.outer_join}[op["kind"]]
    return join(other, JOINERS[op["fn"]], windows, stream_joined=joined)


# --- KTable groupBy, its aggregations and KTable-KTable joins (GroupedTablePrograms / TableJoinPrograms.java) ---


def _remove(agg: str, v: str) -> str:
    """The aggregate without the first occurrence of `v` (Java's indexOf / substring)."""
    i = agg.find(v)
    return agg if i < 0 else agg[:i] + agg[i + len(v) :]


#: (group key, value) of a table row; a null key drops the row from every group
TABLE_KEY_SELECTORS: dict[str, Callable[[Any, Any], tuple[Any, Any]]] = {
    "key": lambda k, v: (k, v),
    "const": lambda k, v: ("k", v),
    "first": lambda k, v: (_first(v), v),
    "swap": lambda k, v: (v, k),
    "long_only": lambda k, v: (v if len(v) > 2 else None, v),
    "value_as_key": lambda k, v: (_java_str(v), k),
    "parity": lambda k, v: ("even" if v % 2 == 0 else None, v),
}
#: subtractors, as (value, aggregate) -> aggregate
SUBTRACTORS: dict[str, Callable[[Any, Any], Any]] = {
    "remove": lambda v, agg: _remove(agg, v),
    "len_sub": lambda v, agg: agg - len(v),
    "minus": lambda v, agg: agg - v,
}


def grouped_or_joined_table_op(op: dict[str, Any], source: Any, kw: dict[str, Any], env: dict[str, Any]) -> Any:
    """The result of a KTable `groupBy`, of an aggregation of a grouped table or of a KTable-KTable join;
    None if `op` is none of them."""
    kind, fn, sub = op["op"], op.get("fn"), op.get("sub")
    vtype = op.get("vtype", "string")
    if kind in ("join", "leftJoin", "outerJoin") and isinstance(source, KTable):
        join = {"join": source.join, "leftJoin": source.left_join, "outerJoin": source.outer_join}[kind]
        if op.get("store") is not None:
            kw.update(store_name=op["store"], value_serde="str")
        if op.get("fk") is not None:
            return join(env[op["table"]], FOREIGN_KEY_EXTRACTORS[op["fk"]], JOINERS[fn], **kw)
        return join(env[op["table"]], JOINERS[fn], **kw)
    if kind == "groupBy" and isinstance(source, KTable):
        return source.group_by(TABLE_KEY_SELECTORS[fn], key_serde="str", value_serde=serde(vtype), **kw)
    if not isinstance(source, KGroupedTable):
        return None
    if kind == "count":
        return source.count(op.get("store"), **kw)
    subtract = SUBTRACTORS[sub]
    if kind == "reduce":
        return source.reduce(REDUCERS[fn], lambda agg, v: subtract(v, agg), op.get("store"), **kw)
    return source.aggregate(
        INITIALIZERS[fn],
        AGGREGATORS[fn],
        lambda k, v, agg: subtract(v, agg),
        op.get("store"),
        value_serde=serde(vtype),
        **kw,
    )


def serde(vtype: str) -> str:
    return "int64" if vtype == "long" else "str"


def build(program: list[dict[str, Any]]) -> StreamsBuilder:
    """The streamlet StreamsBuilder of a program (see the module docstring)."""
    builder = StreamsBuilder()
    env: dict[str, Any] = {}
    for op in program:
        kind = op["op"]
        source: Any = env.get(op.get("in", ""))
        name = op.get("name")
        fn = op.get("fn")
        vtype = op.get("vtype", "string")
        kw: dict[str, Any] = {} if name is None else {"name": name}
        result: (
            KStream | KGroupedStream | KGroupedTable | TimeWindowedKStream | SessionWindowedKStream | KTable | None
        ) = None
        table_result = grouped_or_joined_table_op(op, source, kw, env)
        if table_result is not None:
            result = table_result
        elif kind == "stream":
            result = builder.stream(op["topics"], key_serde="str", value_serde="str", **kw)
        elif kind in ("filter", "filterNot", "mapValues") and op.get("store") is not None:  # materialized KTable op
            table_op = {"filter": source.filter, "filterNot": source.filter_not, "mapValues": source.map_values}[kind]
            function = VALUE_MAPPERS[fn] if kind == "mapValues" else PREDICATES[fn]
            result = table_op(function, store_name=op["store"], value_serde=serde(vtype), **kw)
        elif kind == "filter":
            result = source.filter(PREDICATES[fn], **kw)
        elif kind == "filterNot":
            result = source.filter_not(PREDICATES[fn], **kw)
        elif kind == "mapValues":
            result = source.map_values(VALUE_MAPPERS[fn], **kw)
        elif kind == "flatMapValues":
            result = source.flat_map_values(words, **kw)
        elif kind == "selectKey":
            result = source.select_key(KEY_SELECTORS[fn], **kw)
        elif kind == "map":
            result = source.map(lambda k, v: (v, _java_str(k)), **kw)
        elif kind == "flatMap":
            result = source.flat_map(lambda k, v: [(w, v) for w in words(v)], **kw)
        elif kind == "peek":
            result = source.peek(lambda k, v: None, **kw)
        elif kind == "to":
            key_serde: Any = "str" if op.get("wsize") is None else TimeWindowedSerde(StringSerde(), op["wsize"])
            if op.get("session"):
                key_serde = SessionWindowedSerde(StringSerde())
            source.to(op["topic"], key_serde=key_serde, value_serde=serde(vtype), **kw)
        elif kind == "windowedBy":
            if op.get("grace") is None:
                windows = TimeWindows.of_size_with_no_grace(op["size"])
            else:
                windows = TimeWindows.of_size_and_grace(op["size"], op["grace"])
            if op.get("advance") is not None:
                windows = windows.advance_by(op["advance"])
            result = source.windowed_by(windows)
        elif kind == "sessionWindowedBy":
            if op.get("grace") is None:
                sessions = SessionWindows.of_inactivity_gap_with_no_grace(op["gap"])
            else:
                sessions = SessionWindows.of_inactivity_gap_and_grace(op["gap"], op["grace"])
            result = source.windowed_by(sessions)
        elif kind == "slidingWindowedBy":
            if op.get("grace") is None:
                sliding = SlidingWindows.of_time_difference_with_no_grace(op["difference"])
            else:
                sliding = SlidingWindows.of_time_difference_and_grace(op["difference"], op["grace"])
            result = source.windowed_by(sliding)
        elif kind == "groupBy":
            result = source.group_by(KEY_SELECTORS[fn], key_serde="str", value_serde=serde(vtype), **kw)
        elif kind == "groupByKey":
            result = source.group_by_key(key_serde="str", value_serde=serde(vtype), **kw)
        elif kind == "count":
            result = source.count(op.get("store"), **kw)
        elif kind == "reduce":
            result = source.reduce(REDUCERS[fn], op.get("store"), **kw)
        elif kind == "aggregate" and isinstance(source, SessionWindowedKStream):
            result = source.aggregate(
                INITIALIZERS[fn], AGGREGATORS[fn], MERGERS[fn], op.get("store"), value_serde=serde(vtype), **kw
            )
        elif kind == "aggregate":
            result = source.aggregate(
                INITIALIZERS[fn], AGGREGATORS[fn], op.get("store"), value_serde=serde(vtype), **kw
            )
        elif kind == "table":
            result = builder.table(op["topic"], key_serde="str", value_serde="str", store_name=op.get("store"), **kw)
        elif kind in ("join", "leftJoin"):
            join = source.join if kind == "join" else source.left_join
            result = join(env[op["table"]], JOINERS[fn], key_serde="str", value_serde=serde(vtype), **kw)
        elif kind in GLOBAL_OPS:
            result = _global_table_op(builder, op, source, env)
        elif kind == "split":
            split = source.split(name=op["name"])
            for branch in op["branches"]:
                split.branch(PREDICATES[branch["fn"]], None if branch["name"] is None else Branched.as_(branch["name"]))
            default = op.get("default")
            if default is None:
                branches = split.no_default_branch()
            else:
                branches = split.default_branch(None if default["name"] is None else Branched.as_(default["name"]))
            suffixes = [str(i + 1) if b["name"] is None else b["name"] for i, b in enumerate(op["branches"])]
            if default is not None:
                suffixes.append("0" if default["name"] is None else default["name"])
            for var, suffix in zip(op["ids"], suffixes, strict=True):
                env[var] = branches[op["name"] + suffix]
        elif kind == "streamJoin":
            result = stream_join(source, env[op["other"]], op)
        elif kind == "merge":
            result = source.merge(env[op["other"]], **kw)
        elif kind == "toStream":
            result = source.to_stream(**kw)
        elif kind == "suppress":
            result = source.suppress(suppressed(op))
        elif kind == "process":
            factory = counting_processor(op["interval"], op["ptype"], op.get("cancel_after"))
            result = source.process(factory, **kw)
        else:
            raise ValueError(f"unknown op {kind!r}")
        if "id" in op:
            env[op["id"]] = result
    return builder


# --- global tables (Java twin: GlobalTablePrograms.java) ---

GLOBAL_OPS = ("globalTable", "globalJoin", "globalLeftJoin")
#: a stream-global table join's key selectors: the record's key, or one of KEY_SELECTORS
GLOBAL_KEY_SELECTORS: dict[str, Callable[[Any, Any], Any]] = {"key": lambda k, v: k, **KEY_SELECTORS}


def _global_table_op(builder: StreamsBuilder, op: dict[str, Any], source: Any, env: dict[str, Any]) -> Any:
    name = op.get("name")
    kw: dict[str, Any] = {} if name is None else {"name": name}
    if op["op"] == "globalTable":
        return builder.global_table(op["topic"], key_serde="str", value_serde="str", store_name=op.get("store"), **kw)
    join = source.join if op["op"] == "globalJoin" else source.left_join
    return join(env[op["table"]], GLOBAL_KEY_SELECTORS[op["key"]], JOINERS[op["fn"]], **kw)
