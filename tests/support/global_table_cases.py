"""Random semantics-oracle cases with GlobalKTables and KStream-GlobalKTable joins (tests/support/dsl_spec.py).

``global_table_semantic_cases()`` draws 1-2 global tables (store named or not, source named or not), 1-2
streams with stateless operations (some re-keying, some changing the value type), joins and left joins of
streams with the global tables through every key selector (the record's key, its value, the value's first
letter, a constant), joins of joins, streams written to a global topic (which the drivers read back), and
aggregations after them, which must repartition a stream re-keyed before its global join. Global topics get
updates, tombstones and null keys, interleaved with stream records, in any timestamp order.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

_STREAM_KEYS = ["a", "ab", "k1", None]
_TABLE_KEYS = ["a", "ab", "b", "k", "k1", None]
_WORDS = ["a", "b", "ab", "abc", "ba"]


@st.composite
def global_table_programs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str], list[str]]:
    """A program, its stream topics and its global topics; value types are tracked for the functions."""
    program: list[dict[str, Any]] = []
    stream_topics: list[str] = []
    global_topics: list[str] = []
    streams: list[tuple[str, str]] = []  # (variable, value type)
    globals_: list[str] = []
    counter = {"var": 0, "out": 0, "name": 0}

    def var(prefix: str) -> str:
        counter["var"] += 1
        return f"{prefix}{counter['var']}"

    def maybe_name(prefix: str) -> str | None:
        if draw(st.integers(0, 4)) == 0:
            counter["name"] += 1
            return f"{prefix}{counter['name']}"
        return None

    def output(source: str, vtype: str) -> None:
        counter["out"] += 1
        program.append({"op": "to", "in": source, "topic": f"out{counter['out']}", "vtype": vtype})

    for i in range(draw(st.integers(1, 2))):
        g, topic = var("g"), f"gin{i + 1}"
        global_topics.append(topic)
        store = f"gstore{i + 1}" if draw(st.booleans()) else None
        program.append({"op": "globalTable", "id": g, "topic": topic, "store": store, "name": maybe_name("glob")})
        globals_.append(g)
    for i in range(draw(st.integers(1, 2))):
        s, topic = var("s"), f"in{i + 1}"
        stream_topics.append(topic)
        program.append({"op": "stream", "id": s, "topics": [topic], "name": None})
        streams.append((s, "string"))

    for _ in range(draw(st.integers(1, 8))):
        roll = draw(st.integers(0, 99))
        if roll < 25:  # a stateless stream operation
            s, stype = draw(st.sampled_from(streams))
            kind = draw(st.sampled_from(["filter", "mapValues"] + (["selectKey"] if stype == "string" else [])))
            v = var("s")
            op: dict[str, Any] = {"op": kind, "in": s, "id": v, "name": maybe_name("sop")}
            vtype = stype
            if kind == "filter":
                op["fn"] = "even" if stype == "long" else draw(st.sampled_from(["short", "has_a"]))
            elif kind == "mapValues":
                op["fn"] = draw(st.sampled_from(["str", "inc"] if stype == "long" else ["upper", "first", "length"]))
                vtype = {"length": "long", "inc": "long", "str": "string"}.get(op["fn"], stype)
            else:
                op["fn"] = draw(st.sampled_from(["value", "first", "const"]))
            program.append(op)
            streams.append((v, vtype))
        elif roll < 80:  # a global join (string values may be the table key; long ones may not)
            s, stype = draw(st.sampled_from(streams))
            selectors = ["key", "value", "first", "const"] if stype == "string" else ["key", "const"]
            v = var("j")
            program.append(
                {
                    "op": draw(st.sampled_from(["globalJoin", "globalLeftJoin"])),
                    "in": s,
                    "id": v,
                    "table": draw(st.sampled_from(globals_)),
                    "key": draw(st.sampled_from(selectors)),
                    "fn": "pair",
                    "name": maybe_name("gj"),
                }
            )
            streams.append((v, "string"))
            if draw(st.booleans()):
                output(v, "string")
        elif roll < 88 and any(stype == "string" for _, stype in streams):  # feed a global table from a stream
            s, _ = draw(st.sampled_from([x for x in streams if x[1] == "string"]))
            program.append({"op": "to", "in": s, "topic": draw(st.sampled_from(global_topics)), "vtype": "string"})
        else:  # downstream of a join: an aggregation, which repartitions a re-keyed stream
            s, stype = draw(st.sampled_from(streams))
            g, t, o = var("g"), var("a"), var("s")
            program.append({"op": "groupByKey", "in": s, "id": g, "vtype": stype})
            program.append({"op": "count", "in": g, "id": t, "store": None})
            program.append({"op": "toStream", "in": t, "id": o})
            output(o, "long")
    for s, stype in streams[-2:]:
        output(s, stype)
    return program, stream_topics, global_topics


@st.composite
def global_table_semantic_cases(draw: st.DrawFn) -> dict[str, Any]:
    program, stream_topics, global_topics = draw(global_table_programs())
    steps: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 16))):
        topic = draw(st.sampled_from(stream_topics + global_topics))
        keys = _TABLE_KEYS if topic in global_topics else _STREAM_KEYS
        value = None if draw(st.integers(0, 6)) == 0 else draw(st.sampled_from(_WORDS))
        steps.append(
            {"topic": topic, "key": draw(st.sampled_from(keys)), "value": value, "timestamp": draw(st.integers(0, 50))}
        )
    config = {"statestore_cache_max_bytes": draw(st.sampled_from([0, 10 * 1024 * 1024]))}
    return {"application_id": "app", "config": config, "program": program, "inputs": steps}
