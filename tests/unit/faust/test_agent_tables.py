"""An agent that uses a table its `tables=[...]` does not declare: an error naming the table and what to add."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import App
from streamlet.faust.agent_context import AgentError
from streamlet.faust.agents import agent_output_topics
from streamlet.testing import TopologyTestDriver


def test_an_undeclared_table_fails_when_the_topology_is_built() -> None:
    app = App("shop")
    orders = app.topic("orders", key_serde="str", value_serde="str")
    counts = app.Table("counts", key_serde="str", value_serde="int64", default=int)
    totals = app.Table("totals", key_serde="str", value_serde="int64", default=int)

    @app.agent(orders, tables=[counts])
    async def tally(stream: Any) -> None:
        async for order in stream:
            counts[order] += 1
            totals[order] += 2

    with pytest.raises(AgentError, match=r"agent .*tally uses table\(s\) 'totals' but does not declare them.*tables="):
        app.topology()


def test_an_undeclared_windowed_table_fails_too() -> None:
    app = App("clicks")
    clicks = app.topic("clicks", key_serde="str", value_serde="str")
    per_minute = app.Table("per-minute", key_serde="str", value_serde="int64", default=int).tumbling(60)

    @app.agent(clicks)
    async def count(stream: Any) -> None:
        async for user in stream:
            per_minute[user] += 1

    with pytest.raises(AgentError, match="'per-minute' but does not declare"):
        app.topology()


def test_declared_and_global_tables_pass() -> None:
    app = App("shop")
    orders = app.topic("orders", key_serde="str", value_serde="str")
    counts = app.Table("counts", key_serde="str", value_serde="int64", default=int).tumbling(60)
    rates = app.GlobalTable("rates", key_serde="str", value_serde="str")

    @app.agent(orders, tables=[counts])
    async def tally(stream: Any) -> None:
        async for order in stream:
            counts[order] += 1 if rates.get(order) is None else 2

    assert "stores: [counts]" in str(app.topology().describe())


def test_a_table_the_check_cannot_see_fails_at_the_record_saying_what_to_add() -> None:
    app = App("shop")
    orders = app.topic("orders", key_serde="str", value_serde="str")
    by_name = {"totals": app.Table("totals", key_serde="str", value_serde="int64", default=int)}

    @app.agent(orders)
    async def tally(stream: Any) -> None:
        async for order in stream:
            by_name["totals"][order] += 1  # through a dict: not visible when the topology is built

    with TopologyTestDriver(app) as driver:
        topic = driver.create_input_topic("orders", "str", "str")
        with pytest.raises(AgentError, match=r"table 'totals' is not a table of the agent .*tables=\[\.\.\.\]"):
            topic.pipe_input("k", "ann", timestamp=1)


def test_the_topics_an_agent_may_write_are_its_referenced_topics_agents_and_sinks() -> None:
    app = App("shop")
    orders = app.topic("orders", key_serde="str", value_serde="str")
    audit = app.topic("audit", key_serde="str", value_serde="str")
    totals = app.topic("totals", key_serde="str", value_serde="str")
    archive = app.topic("archive", key_serde="str", value_serde="str")

    @app.agent(archive)
    async def archiver(stream: Any) -> None:
        async for _ in stream:
            pass

    @app.agent(orders, sink=[audit])
    async def tally(stream: Any) -> Any:
        async for order in stream:
            await totals.send(key=order, value=order)
            await archiver.send(value=order)
            yield order

    outputs = agent_output_topics([tally])
    assert set(outputs) == {"totals", "archive", "audit"}
    assert all(writers == [f"agent {tally.name}"] for writers in outputs.values())
