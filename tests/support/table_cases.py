"""Random semantics-oracle cases with tables and KStream-KTable joins (the language of tests/support/dsl_spec.py).

``table_semantic_cases()`` draws 1-2 source tables (materialized or not, named or not) with chains of KTable
filter / filterNot / mapValues (some materialized), 1-2 streams with stateless operations (some re-keying,
so joins repartition), splits into branches and merges, joins and left joins of streams with tables, and
outputs of streams, joined streams and tables. Tables of count / reduce aggregations, of streams or of
re-grouped tables (`groupBy` with adders and subtractors), are filtered, mapped, joined and streamed too,
and tables are joined with tables (join / leftJoin / outerJoin, and foreign-key join / leftJoin), then streamed
or re-grouped. Aggregations' tables are sometimes suppressed (time limits), and the suppressed tables used like
the others.
Input records hit every topic with colliding keys, null keys and null values, in any timestamp order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st

from tests.support import dsl_spec
from tests.support.semantics_cases import OPTIMIZATIONS, suppression

_KEYS = ["a", "ab", "k1", None]
_WORDS = ["a", "b", "ab", "abc", "ba"]


@st.composite
def table_programs(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[str]]:
    """A program and its input topics; value types are tracked so each function gets what it takes."""
    program: list[dict[str, Any]] = []
    topics: list[str] = []
    tables: list[tuple[str, str]] = []  # (variable, value type)
    aggregations: list[tuple[str, str]] = []
    streams: list[tuple[str, str]] = []
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
        t = var("t")
        topic = f"tin{i + 1}"
        topics.append(topic)
        store = f"tstore{i + 1}" if draw(st.booleans()) else None
        program.append({"op": "table", "id": t, "topic": topic, "store": store, "name": maybe_name("tab")})
        tables.append((t, "string"))
    for i in range(draw(st.integers(1, 2))):
        s = var("s")
        topic = f"in{i + 1}"
        topics.append(topic)
        program.append({"op": "stream", "id": s, "topics": [topic], "name": None})
        streams.append((s, "string"))

    # tables with no value serde in Kafka (an unmaterialized join's or mapValues' result, and unmaterialized
    # filters of one): a foreign-key join cannot hash or send their values, and Kafka refuses it at start-up
    serdeless: set[str] = set()
    for _ in range(draw(st.integers(1, 10))):
        roll = draw(st.integers(0, 99))
        if roll < 26:  # a KTable operation
            t, ttype = draw(st.sampled_from(tables + aggregations))
            kind = draw(st.sampled_from(["filter", "filterNot", "mapValues"]))
            v = var("t")
            if kind == "mapValues":
                fns = ["str", "inc"] if ttype == "long" else [*dsl_spec.STRING_TO_STRING, "length"]
                fn = draw(st.sampled_from(fns))
                vtype = dsl_spec.RESULT_TYPE.get(fn, ttype)
            else:
                fn = "even" if ttype == "long" else draw(st.sampled_from(["short", "has_a"]))
                vtype = ttype
            op = {"op": kind, "in": t, "id": v, "fn": fn, "name": maybe_name("top")}
            if draw(st.integers(0, 3)) == 0:  # materialized
                counter["name"] += 1
                op.update(store=f"opstore{counter['name']}", vtype=vtype)
            program.append(op)
            tables.append((v, vtype))
            if "store" not in op and (kind == "mapValues" or t in serdeless):
                serdeless.add(v)
        elif roll < 46:  # split a stream, or merge two
            s, stype = draw(st.sampled_from(streams))
            if draw(st.booleans()):
                other, _ = draw(st.sampled_from([x for x in streams if x[1] == stype]))
                v = var("m")
                program.append({"op": "merge", "in": s, "id": v, "other": other, "name": maybe_name("mrg")})
                streams.append((v, stype))
                continue
            fns = ["even"] if stype == "long" else ["short", "has_a"]
            branches = [
                {"fn": draw(st.sampled_from(fns)), "name": draw(st.sampled_from([None, "x", "y"]))}
                for _ in range(draw(st.integers(1, 3)))
            ]
            names = [b["name"] for b in branches]
            if len(set(n for n in names if n)) < len([n for n in names if n]):
                branches = [{"fn": b["fn"], "name": None} for b in branches]  # branch names are unique
            default = draw(st.sampled_from([None, {"name": None}, {"name": "d"}]))
            ids = [var("b") for _ in range(len(branches) + (default is not None))]
            counter["name"] += 1
            split = {"op": "split", "in": s, "name": f"sp{counter['name']}-", "branches": branches}
            program.append({**split, "default": default, "ids": ids})
            streams.extend((i, stype) for i in ids)
        elif roll < 54:  # a stateless stream operation
            s, stype = draw(st.sampled_from(streams))
            choices = ["filter", "mapValues"] + (["selectKey", "map"] if stype == "string" else [])
            kind = draw(st.sampled_from(choices))
            v = var("s")
            op: dict[str, Any] = {"op": kind, "in": s, "id": v, "name": maybe_name("sop")}
            vtype = stype
            if kind == "filter":
                op["fn"] = "even" if stype == "long" else draw(st.sampled_from(["short", "has_a"]))
            elif kind == "mapValues":
                op["fn"] = draw(st.sampled_from(["str", "inc"] if stype == "long" else ["upper", "first", "length"]))
                vtype = dsl_spec.RESULT_TYPE.get(op["fn"], stype)
            elif kind == "selectKey":
                op["fn"] = draw(st.sampled_from(["value", "first", "const"]))
            else:
                op["fn"] = "swap"
            program.append(op)
            streams.append((v, vtype))
        elif roll < 64:  # a table re-grouped and aggregated
            table = draw(st.sampled_from(tables + aggregations))
            aggregations.append(_grouped_table_aggregation(draw, program, table, var, maybe_name))
        elif roll < 70:  # an aggregation's table (joined, streamed, filtered, mapped and re-grouped)
            s, stype = draw(st.sampled_from(streams))
            g, t = var("g"), var("a")
            if stype == "string" and draw(st.booleans()):  # re-keyed: the aggregation reads a repartition
                program.append({"op": "groupBy", "in": s, "id": g, "fn": "first", "vtype": stype})
            else:
                program.append({"op": "groupByKey", "in": s, "id": g, "vtype": stype})
            if draw(st.booleans()):
                program.append({"op": "count", "in": g, "id": t, "store": None})
                aggregations.append((t, "long"))
            else:
                fn = "sum" if stype == "long" else "concat"
                program.append({"op": "reduce", "in": g, "id": t, "fn": fn, "vtype": stype, "store": None})
                aggregations.append((t, stype))
            if draw(st.integers(0, 2)) == 0:  # suppressed: a table like the others, read through its buffer
                f, ftype, _ = draw(suppression(program, (*aggregations[-1], None), var("f"), maybe_name("sup")))
                aggregations.append((f, ftype))
        elif roll < 76:  # a table-table join (or foreign-key join), streamed out or re-grouped and aggregated
            (a, atype), (b, _) = (
                draw(st.sampled_from(tables + aggregations)),
                draw(st.sampled_from(tables + aggregations)),
            )
            v = var("tj")
            foreign_key = (  # the left value names the foreign key
                atype == "string" and a not in serdeless and b not in serdeless and draw(st.integers(0, 2)) == 0
            )
            kinds = ["join", "leftJoin"] if foreign_key else ["join", "leftJoin", "outerJoin"]
            kind = draw(st.sampled_from(kinds))
            op = {"op": kind, "in": a, "id": v, "table": b, "fn": "pair", "name": maybe_name("tj"), "store": None}
            if foreign_key:
                op["fk"] = draw(st.sampled_from(["first_word", "key_or_prefix"]))
            if draw(st.integers(0, 3)) == 0:  # materialized: joins read its store
                counter["name"] += 1
                op["store"] = f"jstore{counter['name']}"
            if op["store"] is None:
                serdeless.add(v)
            # else joins read both its tables and join them (the join's getter); an unmaterialized foreign-key
            # join's result is a table source that a reader would materialize with no value serde (Kafka refuses)
            if not (foreign_key and op["store"] is None):
                tables.append((v, "string"))
            program.append(op)
            # a foreign-key join's result is a table source: only materialized has it a value serde to re-group
            if draw(st.booleans()) and (not foreign_key or op["store"] is not None):
                aggregations.append(_grouped_table_aggregation(draw, program, (v, "string"), var, maybe_name))
            else:
                s = var("s")
                program.append({"op": "toStream", "in": v, "id": s})
                output(s, "string")
        elif roll < 85:  # a join
            s, stype = draw(st.sampled_from(streams))
            t, _ = draw(st.sampled_from(tables + aggregations))
            v = var("j")
            kind = draw(st.sampled_from(["join", "leftJoin"]))
            program.append(
                {"op": kind, "in": s, "id": v, "table": t, "fn": "pair", "vtype": stype, "name": maybe_name("join")}
            )
            streams.append((v, "string"))
            if draw(st.booleans()):
                output(v, "string")
        else:  # a table's updates
            t, ttype = draw(st.sampled_from(tables + aggregations))
            v = var("s")
            program.append({"op": "toStream", "in": t, "id": v, "name": maybe_name("ts")})
            streams.append((v, ttype))
            output(v, ttype)
    for s, stype in streams[-2:]:
        output(s, stype)
    return program, topics


# --- KTable groupBy and its aggregations (GroupedTablePrograms.java) ---


def _grouped_table_aggregation(
    draw: st.DrawFn,
    program: list[dict[str, Any]],
    table: tuple[str, str],
    var: Callable[[str], str],
    maybe_name: Callable[[str], str | None],
) -> tuple[str, str]:
    """`table.groupBy(...)` then a count, reduce or aggregate of it (with its subtractor); one or two
    aggregations share a grouping. Returns the (last) aggregation's table and value type."""
    t, ttype = table
    g = var("g")
    selectors = ["key", "const", "parity"] if ttype == "long" else ["key", "const", "first", "swap", "long_only"]
    selector = draw(st.sampled_from([*selectors, "value_as_key"]))
    ttype = "string" if selector in ("swap", "value_as_key") else ttype  # these select the row's key as value
    grouping = {"op": "groupBy", "in": t, "id": g, "fn": selector, "vtype": ttype}
    program.append({**grouping, "name": maybe_name("grp")})
    result: tuple[str, str] = ("", "")
    for _ in range(draw(st.integers(1, 2))):
        a = var("a")
        store = maybe_name("gstore")
        kinds = ["count", "reduce", "aggregate"]
        kind = draw(st.sampled_from(kinds))
        op: dict[str, Any] = {"op": kind, "in": g, "id": a, "store": store, "name": maybe_name("agg")}
        if kind == "count":
            result = (a, "long")
        elif kind == "reduce":
            op.update(fn="sum", sub="minus") if ttype == "long" else op.update(fn="concat", sub="remove")
            op["vtype"] = ttype
            result = (a, ttype)
        elif ttype == "long":
            op.update(fn="sum", sub="minus", vtype="long")
            result = (a, "long")
        else:
            fn, sub = draw(st.sampled_from([("append", "remove"), ("len_sum", "len_sub")]))
            op.update(fn=fn, sub=sub, vtype=dsl_spec.RESULT_TYPE[fn])
            result = (a, op["vtype"])
        program.append(op)
    return result


@st.composite
def table_semantic_cases(draw: st.DrawFn) -> dict[str, Any]:
    program, topics = draw(table_programs())
    steps: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 16))):
        if draw(st.integers(0, 15)) == 0:
            steps.append({"advance": draw(st.integers(0, 1000))})
            continue
        value = None if draw(st.integers(0, 7)) == 0 else draw(st.sampled_from(_WORDS))
        steps.append(
            {
                "topic": draw(st.sampled_from(topics)),
                "key": draw(st.sampled_from(_KEYS)),
                "value": value,
                "timestamp": draw(st.integers(0, 50)),
            }
        )
    config: dict[str, Any] = {"statestore_cache_max_bytes": draw(st.sampled_from([0, 10 * 1024 * 1024]))}
    if draw(st.integers(0, 2)) == 0:
        config["topology_optimization"] = draw(st.sampled_from(OPTIMIZATIONS))
    return {"application_id": "app", "config": config, "program": program, "inputs": steps}
