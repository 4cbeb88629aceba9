"""Semantics oracle cases: a DSL program (tests/support/dsl_spec.py), input records and wall-clock advances.

``semantic_cases()`` draws random cases; ``run_streamlet(case)`` runs one on streamlet's TopologyTestDriver and
returns what the Java oracle prints for it: ``{"topics": {topic: [[key_hex, value_hex, timestamp], ...]}}``,
every topic written to (sinks, repartition and changelog topics), records in the order they were written.

A case::

    {"application_id": "app", "config": {"statestore_cache_max_bytes": 0},
     "program": [...], "inputs": [{"topic": "in1", "key": "k1", "value": "a b", "timestamp": 5}, {"advance": 10}]}

A config may name a `topology_optimization`: both sides build the program with it.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from streamlet.testing import TopologyTestDriver
from streamlet.topology import Topology
from tests.support import dsl_spec

_WORDS = ["a", "b", "ab", "ba", "c", "abc"]
_TIMESTAMP_WORDS = ["@7", "@150", "drop", "now"]  # what the "payload" extractor reads
#: the "window size" of session-windowed keys (their serde carries both ends)
SESSION = -1


#: the `topology_optimization` values cases draw from
OPTIMIZATIONS = (
    "reuse.ktable.source.topics",
    "merge.repartition.topics",
    "merge.repartition.topics,reuse.ktable.source.topics",
    "single.store.self.join",
    "all",
)


def build_topology(case: dict[str, Any]) -> Topology:
    """The case's program, built as its `topology_optimization` (default none) says, as the oracle builds it."""
    return dsl_spec.build(case["program"]).build(case.get("config", {}).get("topology_optimization", "none"))


def run_streamlet(case: dict[str, Any]) -> dict[str, Any]:
    """The oracle's output format, computed by streamlet's TopologyTestDriver."""
    config = {"application_id": case.get("application_id", "app"), **case.get("config", {})}
    if "timestamp_extractor" in config:
        config["timestamp_extractor"] = dsl_spec.EXTRACTORS[config["timestamp_extractor"]]
    with TopologyTestDriver(build_topology(case), config) as driver:
        for step in case["inputs"]:
            if "advance" in step:
                driver.advance_wall_clock_time(step["advance"])
                continue
            key = None if step["key"] is None else step["key"].encode()
            value = None if step["value"] is None else step["value"].encode()
            driver.pipe_raw(step["topic"], key, value, step["timestamp"])
        topics: dict[str, list[list[Any]]] = {}
        for topic in sorted(driver.produced_topics()):
            records = topics[topic] = []
            while driver.queue_size(topic):
                key_bytes, value_bytes, timestamp = driver.read_raw(topic)
                records.append(
                    [
                        None if key_bytes is None else key_bytes.hex(),
                        None if value_bytes is None else value_bytes.hex(),
                        timestamp,
                    ]
                )
    return {"topics": topics}


@st.composite
def programs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    """A random program and its input topics. Types are tracked so every function gets the values it takes."""
    program: list[dict[str, Any]] = []
    streams: list[tuple[str, str, int | None]] = []  # (variable, value type, window size of Windowed keys)
    grouped: list[tuple[str, str, int | None]] = []  # (variable, value type, window size if windowed_by)
    tables: list[tuple[str, str, int | None]] = []
    inputs: list[str] = []
    outputs: dict[str, tuple[str, int | None]] = {}  # topic -> (value type, window size) of what it holds
    counter = {"var": 0, "out": 0, "name": 0, "store": 0}

    def var(prefix: str) -> str:
        counter["var"] += 1
        return f"{prefix}{counter['var']}"

    def maybe_name(prefix: str) -> str | None:
        if draw(st.integers(0, 4)) == 0:
            counter["name"] += 1
            return f"{prefix}{counter['name']}"
        return None

    def new_stream() -> None:
        topics = [f"in{len(inputs) + i + 1}" for i in range(draw(st.integers(1, 2)))]
        inputs.extend(topics)
        v = var("s")
        program.append({"op": "stream", "id": v, "topics": topics, "name": maybe_name("src")})
        streams.append((v, "string", None))

    new_stream()
    for _ in range(draw(st.integers(1, 10))):
        roll = draw(st.integers(0, 99))
        if roll < 6 and len(inputs) < 5:
            new_stream()
        elif grouped and roll < 36:
            g, gtype, size = draw(st.sampled_from(grouped))
            if size is None and draw(st.booleans()):  # window it, then aggregate the windowed stream
                w = var("w")
                grace = draw(st.sampled_from([None, 0, 5, 20]))
                windowing = draw(st.sampled_from(["time", "session", "sliding"]))
                if windowing == "session":
                    size = SESSION
                    gap = draw(st.sampled_from([1, 5, 10, 30]))
                    program.append({"op": "sessionWindowedBy", "in": g, "id": w, "gap": gap, "grace": grace})
                elif windowing == "sliding":
                    size = draw(st.sampled_from([1, 5, 10, 30]))
                    program.append({"op": "slidingWindowedBy", "in": g, "id": w, "difference": size, "grace": grace})
                else:
                    size = draw(st.sampled_from([5, 10, 30, 60]))
                    advance = draw(st.sampled_from([None, None, 1, 5, size]))
                    if advance is not None and advance > size:
                        advance = None
                    windowed_by = {"op": "windowedBy", "in": g, "id": w, "size": size, "grace": grace}
                    program.append({**windowed_by, "advance": advance})
                grouped.append((w, gtype, size))
                g = w
            kind = draw(st.sampled_from(["count", "reduce", "aggregate"]))
            store = None
            if draw(st.booleans()):
                counter["store"] += 1
                store = f"store{counter['store']}"
            t = var("t")
            op: dict[str, Any] = {"op": kind, "in": g, "id": t, "store": store, "name": maybe_name("agg")}
            if kind == "count":
                ttype = "long"
            elif kind == "reduce":
                op["fn"] = draw(st.sampled_from(["concat", "max"])) if gtype == "string" else "sum"
                ttype = op["vtype"] = gtype
            else:
                op["fn"] = draw(st.sampled_from(["append", "len_sum"])) if gtype == "string" else "sum"
                ttype = op["vtype"] = dsl_spec.RESULT_TYPE.get(op["fn"], "long")
            program.append(op)
            tables.append((t, ttype, size))
            if draw(st.integers(0, 2)) == 0:  # suppress it, and write out what leaves the buffer
                f, _, _ = suppressed = draw(suppression(program, (t, ttype, size), var("f"), maybe_name("sup")))
                tables.append(suppressed)
                counter["out"] += 1
                v = var("s")
                program.append({"op": "toStream", "in": f, "id": v})
                program.append({"op": "to", "in": v, "topic": f"out{counter['out']}", "vtype": ttype, "wsize": size})
        elif tables and roll < 46:
            t, ttype, size = draw(st.sampled_from(tables))
            v = var("s")
            program.append({"op": "toStream", "in": t, "id": v, "name": maybe_name("ts")})
            streams.append((v, ttype, size))
        else:
            s, stype, size = draw(st.sampled_from(streams))
            choices = ["filter", "filterNot", "mapValues", "peek", "to", "to"]
            if size is None:  # Windowed keys are only written out
                choices.append("groupByKey")
                if stype == "string":
                    choices += ["flatMapValues", "selectKey", "map", "flatMap", "groupBy", "groupBy", "process"]
            kind = draw(st.sampled_from(choices))
            name = maybe_name(kind[:3])
            if kind in ("filter", "filterNot"):
                fn = "even" if stype == "long" else draw(st.sampled_from(["short", "has_a"]))
                v = var("s")
                program.append({"op": kind, "in": s, "id": v, "fn": fn, "name": name})
                streams.append((v, stype, size))
            elif kind == "mapValues":
                fns = ["str", "inc"] if stype == "long" else [*dsl_spec.STRING_TO_STRING, "length"]
                fn = draw(st.sampled_from(fns))
                v = var("s")
                program.append({"op": kind, "in": s, "id": v, "fn": fn, "name": name})
                streams.append((v, dsl_spec.RESULT_TYPE.get(fn, stype), size))
            elif kind in ("peek", "flatMapValues", "map", "flatMap"):
                v = var("s")
                fn = {"flatMapValues": "words", "map": "swap", "flatMap": "words_as_keys"}.get(kind)
                program.append({"op": kind, "in": s, "id": v, "fn": fn, "name": name})
                streams.append((v, stype, size if kind == "peek" else None))
            elif kind == "process":  # the counting processor: its punctuations forward strings
                v = var("s")
                op = {"op": kind, "in": s, "id": v, "name": name, "interval": draw(st.sampled_from([5, 10, 50, 300]))}
                op["ptype"] = draw(st.sampled_from(["stream", "stream", "wall"]))
                op["cancel_after"] = draw(st.sampled_from([None, None, 1, 3]))
                program.append(op)
                streams.append((v, stype, None))
            elif kind == "selectKey":
                v = var("s")
                fn = draw(st.sampled_from(["value", "first", "const"]))
                program.append({"op": kind, "in": s, "id": v, "fn": fn, "name": name})
                streams.append((v, stype, None))
            elif kind == "to":
                # now and then into a topic another sink writes: the order records of different
                # sub-topologies come out in becomes visible
                shared = [t for t, kind_of_topic in outputs.items() if kind_of_topic == (stype, size)]
                if shared and draw(st.booleans()):
                    topic = draw(st.sampled_from(shared))
                else:
                    counter["out"] += 1
                    topic = f"out{counter['out']}"
                    outputs[topic] = (stype, size)
                to = {"op": "to", "in": s, "topic": topic, "vtype": stype, "wsize": size, "name": name}
                if size == SESSION:
                    to.update(wsize=None, session=True)
                program.append(to)
            else:
                g = var("g")
                op = {"op": kind, "in": s, "id": g, "vtype": stype, "name": name}
                if kind == "groupBy":
                    op["fn"] = draw(st.sampled_from(["value", "first", "const"]))
                program.append(op)
                grouped.append((g, stype, None))
    return program, inputs


@st.composite
def suppression(
    draw: st.DrawFn, program: list[dict[str, Any]], table: tuple[str, str, int | None], var: str, name: str | None
) -> tuple[str, str, int | None]:
    """Append a suppress of `table` to `program`; return the suppressed table. Emit-final (windowed tables
    only) gets the strict unbounded buffer (a strict bounded one that fills up fails both sides alike); a time
    limit gets any buffer, bounded ones emitting early."""
    t, ttype, size = table
    op: dict[str, Any] = {"op": "suppress", "in": t, "id": var, "name": name}
    if size is not None and draw(st.booleans()):
        op["until"] = "window_close"
    else:
        op["until"] = "time_limit"
        op["wait"] = draw(st.sampled_from([0, 5, 30, 100]))
        op["buffer"] = draw(st.sampled_from(["unbounded", "max_records", "max_bytes"]))
        if op["buffer"] == "max_records":
            op["limit"] = draw(st.integers(1, 3))
        elif op["buffer"] == "max_bytes":
            op["limit"] = draw(st.integers(50, 250))
    if draw(st.integers(0, 3)) == 0:
        op["logging"] = False  # withLoggingDisabled: no buffer changelog
    program.append(op)
    return var, ttype, size


@st.composite
def semantic_cases(draw: st.DrawFn) -> dict[str, Any]:
    program, topics = draw(programs())
    steps: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 12))):
        if draw(st.integers(0, 9)) == 0:
            steps.append({"advance": draw(st.integers(0, 1000))})
            continue
        value: str | None
        if draw(st.integers(0, 9)) == 0:
            value = None  # KV aggregations skip null values; windowed ones count them
        elif draw(st.integers(0, 5)) == 0:
            value = draw(st.sampled_from(_TIMESTAMP_WORDS))  # a whole value the extractor reads
        else:
            value = " ".join(draw(st.lists(st.sampled_from(_WORDS + _TIMESTAMP_WORDS[:2]), max_size=4)))
        steps.append(
            {
                "topic": draw(st.sampled_from(topics)),
                "key": draw(st.sampled_from(["k1", "k2", "a", None])),
                "value": value,
                "timestamp": draw(st.integers(0, 200)),
            }
        )
    config: dict[str, Any] = {"statestore_cache_max_bytes": draw(st.sampled_from([0, 10 * 1024 * 1024]))}
    if draw(st.integers(0, 3)) == 0:
        config["timestamp_extractor"] = "payload"
    if draw(st.integers(0, 2)) == 0:
        config["topology_optimization"] = draw(st.sampled_from(OPTIMIZATIONS))
    return {"application_id": "app", "config": config, "program": program, "inputs": steps}
