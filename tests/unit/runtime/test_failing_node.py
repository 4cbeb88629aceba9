"""Which processor a user function raised in: every node closure marks the exceptions raised in it (`raised_in`,
the innermost node's mark wins), so the error the user sees, and the processing exception handler, get the node
of the table, join or pre-aggregation that called the function, not the stream node upstream of it
(`streamlet.runtime.failing_node`).

Driven through the TopologyTestDriver, which runs the runtime's processor graph."""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from streamlet.runtime import processor_graph
from streamlet.runtime.failing_node import failing_node, raised_in
from streamlet.runtime.task_context import RecordProcessingError
from streamlet.testing import TopologyTestDriver
from streamlet.topology import StreamsBuilder
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from streamlet.topology.table_joined import TableJoined

RUNTIME = Path(processor_graph.__file__).parent


def _fail(*_args: Any) -> NoReturn:
    raise ValueError("the user function failed")


def _raised_in(builder: StreamsBuilder, pipe: Callable[[TopologyTestDriver], None], tmp_path: Path) -> str | None:
    """Pipe records until a user function raises; the node the error names, checked against its message.

    Without record caches, so that a table's update reaches the nodes below it while its record is processed."""
    config = {"application_id": "app", "state_dir": str(tmp_path), "statestore_cache_max_bytes": 0}
    with TopologyTestDriver(builder, config) as driver, pytest.raises(RecordProcessingError) as info:
        pipe(driver)
    assert isinstance(info.value.cause, ValueError)
    assert f"processor {info.value.node} raised ValueError" in str(info.value)
    return info.value.node


def test_a_table_map_values_mapper(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    builder.table("in", "str", "str").map_values(_fail, name="prices").to_stream().to("out")

    def pipe(driver: TopologyTestDriver) -> None:
        driver.create_input_topic("in", "str", "str").pipe_input("k", "v", 1)

    assert _raised_in(builder, pipe, tmp_path) == "prices"


def test_a_stream_table_join_joiner(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    customers = builder.table("customers", "str", "str")
    builder.stream("orders", "str", "str").join(customers, _fail, name="enrich").to("out")

    def pipe(driver: TopologyTestDriver) -> None:
        driver.create_input_topic("customers", "str", "str").pipe_input("c1", "Carol", 1)
        driver.create_input_topic("orders", "str", "str").pipe_input("c1", "order", 2)

    assert _raised_in(builder, pipe, tmp_path) == "enrich"


def test_a_stream_stream_join_joiner(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    payments = builder.stream("payments", "str", "str")
    windows = JoinWindows.of_time_difference_with_no_grace(10)
    builder.stream("orders", "str", "str").join(
        payments, _fail, windows, stream_joined=StreamJoined().with_name("pay")
    ).to("out")

    def pipe(driver: TopologyTestDriver) -> None:
        driver.create_input_topic("orders", "str", "str").pipe_input("k", "order", 1)
        driver.create_input_topic("payments", "str", "str").pipe_input("k", "payment", 2)  # joins the order

    assert _raised_in(builder, pipe, tmp_path) == "pay-other-join"  # the side whose record arrived


def test_a_foreign_key_join_extractor(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    customers = builder.table("customers", "str", "str")
    orders = builder.table("orders", "str", "str")
    orders.join(customers, _fail, lambda o, c: o, table_joined=TableJoined.as_("fk")).to_stream().to("out")

    def pipe(driver: TopologyTestDriver) -> None:
        driver.create_input_topic("orders", "str", "str").pipe_input("o1", "c1", 1)

    assert _raised_in(builder, pipe, tmp_path) == "fk-subscription-registration-processor"


def test_a_pre_aggregated_reduce_reducer(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    words = builder.stream("in", "str", "str").flat_map_values(str.split)
    grouped = words.group_by(lambda k, word: word, key_serde="str", value_serde="str")
    grouped.reduce(_fail, name="longest", pre_aggregate=True).to_stream().to("out")

    def pipe(driver: TopologyTestDriver) -> None:
        # the first "w" is the key's partial; the second is reduced into it before the partials are sent at the
        # commit after this record (a reducer called later, on the partials, would raise in "longest")
        driver.create_input_topic("in", "str", "str").pipe_input("a", "w w", 1)

    assert _raised_in(builder, pipe, tmp_path) == "longest-preaggregate"


def test_a_pre_aggregated_aggregate_aggregator(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in", "str", "str").group_by(lambda k, v: v, key_serde="str", value_serde="str")
    grouped.aggregate(lambda: 0, _fail, value_serde="int64", name="total", combiner=lambda a, b: a + b)

    def pipe(driver: TopologyTestDriver) -> None:
        driver.create_input_topic("in", "str", "str").pipe_input("a", "w", 1)

    assert _raised_in(builder, pipe, tmp_path) == "total-preaggregate"


def test_the_innermost_node_names_the_error_once() -> None:
    error = ValueError("kept by a user function")
    raised_in(error, "inner")
    raised_in(error, "outer")
    assert failing_node(error) == "inner"
    raised_in(error, "later")  # raised again on another record: named afresh
    assert failing_node(error) == "later"
    assert failing_node(ValueError("raised outside every node")) is None


def _node_closures(path: Path) -> list[ast.FunctionDef]:
    """The functions with a `_node` parameter: the node closures' convention."""
    tree = ast.parse(path.read_text())
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and any(arg.arg == "_node" for arg in node.args.args)
    ]


def _marks_its_errors(function: ast.FunctionDef) -> bool:
    """Whether the body is `try: ... except Exception as exc: raised_in(exc, _node); raise` (after a docstring)."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Try):
        return False
    block = body[0]
    if len(block.handlers) != 1 or block.orelse or block.finalbody:
        return False
    handler = block.handlers[0]
    expected = [ast.dump(statement) for statement in ast.parse(f"raised_in({handler.name}, _node)\nraise").body]
    return (
        isinstance(handler.type, ast.Name)
        and handler.type.id == "Exception"
        and [ast.dump(statement) for statement in handler.body] == expected
    )


def test_every_node_closure_marks_the_errors_raised_in_it() -> None:
    closures = {f"{path.name}:{f.name}": f for path in RUNTIME.glob("*.py") for f in _node_closures(path)}
    assert "ktable_processors.py:table_map_values" in closures  # the scan finds them
    assert "processor_graph.py:sink" in closures
    assert [name for name, function in closures.items() if not _marks_its_errors(function)] == []
