"""Random semantics-oracle cases with KStream-KStream joins (the language of tests/support/dsl_spec.py).

``stream_join_cases()`` draws 1-3 streams, stateless operations and merges of them (some re-keying, so joins
repartition), then 1-3 joins, left joins and outer joins of two of them (or of one with itself, or of a join's
result), with random `JoinWindows` (grace, asymmetric `before`/`after`) and `StreamJoined` names; every join is
written out, and some are counted per key.
Inputs hit every topic with few keys, null keys and null values, timestamps in any order (some far apart, so
window segments expire), and wall-clock advances that let unmatched records be emitted.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tests.support.semantics_cases import OPTIMIZATIONS

_KEYS = ["a", "ab", "k1", None]
_WORDS = ["a", "b", "ab", "abc", "ba"]


@st.composite
def stream_join_programs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    program: list[dict[str, Any]] = []
    topics: list[str] = []
    streams: list[tuple[str, str]] = []  # (variable, value type)
    counter = {"var": 0, "out": 0, "name": 0}

    def var(prefix: str) -> str:
        counter["var"] += 1
        return f"{prefix}{counter['var']}"

    for i in range(draw(st.integers(1, 3))):
        s, topic = var("s"), f"in{i + 1}"
        topics.append(topic)
        program.append({"op": "stream", "id": s, "topics": [topic]})
        streams.append((s, "string"))
    for _ in range(draw(st.integers(0, 3))):
        s, stype = draw(st.sampled_from(streams))
        same_type = [x for x in streams if x[1] == stype]
        if draw(st.integers(0, 4)) == 0:  # a merge of two streams (the join then reads both topics)
            v = var("m")
            program.append({"op": "merge", "in": s, "id": v, "other": draw(st.sampled_from(same_type))[0]})
            streams.append((v, stype))
            continue
        kind = draw(st.sampled_from(["filter", "mapValues", "selectKey"] if stype == "string" else ["filter"]))
        v = var("s")
        op: dict[str, Any] = {"op": kind, "in": s, "id": v}
        vtype = stype
        if kind == "filter":
            op["fn"] = "even" if stype == "long" else draw(st.sampled_from(["short", "has_a"]))
        elif kind == "mapValues":
            op["fn"] = draw(st.sampled_from(["upper", "length"]))
            vtype = "long" if op["fn"] == "length" else "string"
        else:
            op["fn"] = draw(st.sampled_from(["value", "first", "const"]))
        program.append(op)
        streams.append((v, vtype))
    for _ in range(draw(st.integers(1, 3))):
        (s, stype), (other, otype) = draw(st.sampled_from(streams)), draw(st.sampled_from(streams))
        j = var("j")
        op = {
            "op": "streamJoin",
            "in": s,
            "other": other,
            "id": j,
            "kind": draw(st.sampled_from(["join", "leftJoin", "outerJoin"])),
            "fn": "pair",
            "difference": draw(st.sampled_from([0, 1, 5, 20])),
            "grace": draw(st.sampled_from([None, 0, 10, 100])),
            "before": draw(st.sampled_from([None, None, None, 0, 3, 30])),
            "after": draw(st.sampled_from([None, None, None, 0, 3, 30])),
            "vtype": stype,
            "othervtype": otype,
        }
        if draw(st.integers(0, 3)) == 0:
            counter["name"] += 1
            op["name"] = f"sj{counter['name']}"
        if draw(st.integers(0, 3)) == 0:
            counter["name"] += 1
            op["store"] = f"st{counter['name']}"
        program.append(op)
        streams.append((j, "string"))
        counter["out"] += 1
        program.append({"op": "to", "in": j, "topic": f"out{counter['out']}", "vtype": "string"})
        if draw(st.integers(0, 3)) == 0:  # the join's results counted per key (a cached store downstream)
            g, t, ts = var("g"), var("t"), var("s")
            program.append({"op": "groupByKey", "in": j, "id": g, "vtype": "string"})
            program.append({"op": "count", "in": g, "id": t, "store": None})
            program.append({"op": "toStream", "in": t, "id": ts})
            counter["out"] += 1
            program.append({"op": "to", "in": ts, "topic": f"out{counter['out']}", "vtype": "long"})
    return program, topics


@st.composite
def stream_join_cases(draw: st.DrawFn) -> dict[str, Any]:
    program, topics = draw(stream_join_programs())
    steps: list[dict[str, Any]] = []
    base = 0
    for _ in range(draw(st.integers(1, 20))):
        roll = draw(st.integers(0, 15))
        if roll < 2:
            steps.append({"advance": draw(st.sampled_from([0, 500, 1000, 5000]))})
            continue
        if roll == 2:  # jump ahead: earlier windows close, and their segments may expire
            base += draw(st.sampled_from([100, 70_000]))
        value = None if draw(st.integers(0, 7)) == 0 else draw(st.sampled_from(_WORDS))
        steps.append(
            {
                "topic": draw(st.sampled_from(topics)),
                "key": draw(st.sampled_from(_KEYS)),
                "value": value,
                "timestamp": base + draw(st.integers(0, 60)),
            }
        )
    config: dict[str, Any] = {"statestore_cache_max_bytes": draw(st.sampled_from([0, 10 * 1024 * 1024]))}
    if draw(st.integers(0, 2)) == 0:
        # Kafka Streams' merge.repartition.topics cannot build a repartition below a merge node ("Found a null
        # keyChangingChild node for OptimizableRepartitionNode", 4.4.0): a program with a merge gets the others
        merges = any(op["op"] == "merge" for op in program)
        optimizations = [o for o in OPTIMIZATIONS if not (merges and ("merge.repartition" in o or o == "all"))]
        config["topology_optimization"] = draw(st.sampled_from(optimizations))
    return {"application_id": "app", "config": config, "program": program, "inputs": steps}
