"""KStream split/branch and merge against Kafka Streams' TopologyTestDriver (hand-written cases; the generated
cases of test_tables_oracle.py mix them with tables and joins)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle.semantics.test_driver_oracle import check
from tests.support.semantics_oracle import SemanticsOracle

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


def _in(topic: str, *steps: tuple[str | None, str | None, int]) -> list[dict[str, Any]]:
    return [{"topic": topic, "key": k, "value": v, "timestamp": ts} for k, v, ts in steps]


INPUTS = _in("in1", ("k", "a", 1), ("k", "abcd", 2), ("k", "bcd", 3), (None, "b", 4), ("k", None, 5), ("j", "ab", 6))


def _split(default: dict[str, Any] | None, *names: str | None) -> list[dict[str, Any]]:
    fns = ["short", "has_a"]
    ids = [f"b{i}" for i in range(len(names) + (default is not None))]
    program: list[dict[str, Any]] = [
        {"op": "stream", "id": "s", "topics": ["in1"]},
        {
            "op": "split",
            "in": "s",
            "name": "sp-",
            "branches": [{"fn": fns[i % 2], "name": name} for i, name in enumerate(names)],
            "default": default,
            "ids": ids,
        },
    ]
    program += [{"op": "to", "in": var, "topic": f"out-{var}", "vtype": "string"} for var in ids]
    return program


HAND_WRITTEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    # the first matching branch takes a record ("a" is short and has an a: only the first branch gets it)
    "split_with_default": (_split({"name": None}, None, "with-a"), INPUTS),
    "split_without_default": (_split(None, "short", None), INPUTS),
    "split_named_default": (_split({"name": "rest"}, "one"), INPUTS),
    # two branches merged back, with a third stream; a merge of a re-keyed stream repartitions downstream
    "merge_branches_and_a_stream": (
        [
            *_split({"name": None}, None, None)[:2],
            {"op": "stream", "id": "t", "topics": ["in2"]},
            {"op": "merge", "in": "b0", "id": "m1", "other": "b2"},
            {"op": "selectKey", "in": "t", "id": "tk", "fn": "first"},
            {"op": "merge", "in": "m1", "id": "m2", "other": "tk", "name": "all"},
            {"op": "to", "in": "m2", "topic": "merged", "vtype": "string"},
            {"op": "groupByKey", "in": "m2", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "c", "store": "counts"},
        ],
        [*INPUTS, *_in("in2", ("x", "ba", 7), (None, "abc", 8))],
    ),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_split_and_merge_cases_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs = HAND_WRITTEN[name]
    check(oracle, {"program": program, "inputs": inputs, "config": {}})
