"""app.channel(): in-memory channels run their agents inline, in the sending agent's task."""

from __future__ import annotations

import asyncio

import pytest

from streamlet import App
from streamlet.faust.agent_context import task_context
from streamlet.faust.agents import AgentError
from streamlet.task_id import TaskId
from tests.unit.runtime._support import FakeContext, graph_of


def _app_with_channel() -> tuple[App, list[tuple[str, int]]]:
    app = App("chan")
    lengths = app.channel(value_type=str)
    out = app.topic("long-words", value_serde="str")
    seen: list[tuple[str, int]] = []

    @app.agent(lengths)
    async def measure(stream):
        n = 0
        async for word in stream.filter(lambda w: len(w) > 2).map_values(str.upper):
            n += 1  # state of this run, per task
            seen.append((word, n))
            await out.send(value=word)

    @app.agent(app.topic("lines", value_serde="str"))
    async def split(stream):
        async for line in stream:
            for word in line.split():
                await lengths.send(value=word)

    return app, seen


def test_channel_agents_run_inline_with_their_in_memory_steps() -> None:
    app, seen = _app_with_channel()
    ctx = FakeContext(TaskId(0, 0), application_id="chan")
    graph = graph_of(app.topology(), TaskId(0, 0), ctx)
    graph.process("lines", 0, 0, 0, None, b"a tree of life")
    graph.process("lines", 0, 1, 0, None, b"big ox")
    assert seen == [("TREE", 1), ("LIFE", 2), ("BIG", 3)]
    assert [s.value for s in ctx.sent] == [b"TREE", b"LIFE", b"BIG"]  # sent from the sending task
    assert len(app.topology().subtopologies) == 1  # a channel is no topic


def test_each_task_has_its_own_run_of_a_channel_agent() -> None:
    app, seen = _app_with_channel()
    topology = app.topology()
    graphs = [graph_of(topology, TaskId(0, p), FakeContext(TaskId(0, p), application_id="chan")) for p in (0, 1)]
    graphs[0].process("lines", 0, 0, 0, None, b"one two")
    graphs[1].process("lines", 1, 0, 0, None, b"six")
    graphs[0].process("lines", 0, 1, 0, None, b"ten")
    assert seen == [("ONE", 1), ("TWO", 2), ("SIX", 1), ("TEN", 3)]


def test_a_channel_refuses_values_of_another_type() -> None:
    channel = App("chan").channel(value_type=str)
    token = task_context.set(FakeContext(TaskId(0, 0)))  # type: ignore[arg-type]
    try:
        with pytest.raises(TypeError, match="channel channel-1 takes str values, got a int"):
            asyncio.run(channel.send(value=3))
    finally:
        task_context.reset(token)


def test_group_by_and_tables_are_refused_on_a_channel() -> None:
    app = App("chan")
    channel = app.channel()

    @app.agent(channel)
    async def regroup(stream):
        async for _ in stream.group_by(lambda v: v, name="x"):
            pass

    with pytest.raises(AgentError, match="a channel is in memory and not partitioned"):
        app.topology()
    with pytest.raises(AgentError, match="a channel agent has no tables"):
        app2 = App("chan2")

        @app2.agent(app2.channel(), tables=[app2.Table("t")])
        async def counting(stream):
            async for _ in stream:
                pass


def test_sending_to_a_channel_outside_an_agent_is_an_error() -> None:
    with pytest.raises(AgentError, match="inside an agent"):
        asyncio.run(App("chan").channel("c").send(value=1))
