"""Several agents per app and per topic, `agent.send`, and sinks fed by `yield`."""

from __future__ import annotations

import asyncio
import json

import pytest

from streamlet import App, Record
from streamlet.faust.agents import AgentError
from streamlet.task_id import TaskId
from tests.unit.runtime._support import FakeContext, graph_of


class Order(Record):
    id: int
    amount: float


def _run(app: App, topic: str, values: list[bytes]) -> FakeContext:
    """Process `values` in partition 0 of the sub-topology that reads `topic`."""
    topology = app.topology()
    (sub,) = [s for s in topology.subtopologies if topic in s.source_topics]
    task = TaskId(sub.id, 0)
    ctx = FakeContext(task, application_id=app.application_id)
    graph = graph_of(topology, task, ctx)
    for offset, value in enumerate(values):
        graph.process(topic, 0, offset, 1000 + offset, None, value)
    return ctx


def test_two_agents_on_one_topic_both_see_every_record() -> None:
    app = App("multi")
    orders = app.topic("orders", value_type=Order)
    big = app.topic("big", value_type=Order)
    ids = app.topic("ids", value_serde="int64")

    @app.agent(orders)
    async def flag_big(stream):
        async for order in stream.filter(lambda o: o.amount > 100):
            await big.send(value=order)

    @app.agent(orders)
    async def all_ids(stream):
        async for order in stream:
            await ids.send(value=order.id)

    amounts = [5.0, 500.0, 50.0, 150.0]
    ctx = _run(app, "orders", [Order(i, a).dumps() for i, a in enumerate(amounts)])
    assert [json.loads(s.value)["id"] for s in ctx.sent if s.topic == "big"] == [1, 3]
    assert [int.from_bytes(s.value, "big") for s in ctx.sent if s.topic == "ids"] == [0, 1, 2, 3]
    assert len(app.topology().subtopologies) == 1  # one source node feeds both agents


def test_two_declarations_of_one_topic_with_different_serdes_are_an_error() -> None:
    app = App("multi")

    @app.agent(app.topic("orders", value_serde="json"))
    async def a(stream):
        async for _ in stream:
            pass

    @app.agent(app.topic("orders", value_serde="str"))
    async def b(stream):
        async for _ in stream:
            pass

    with pytest.raises(AgentError, match="declare the topic once"):
        app.topology()


def test_yielded_values_go_to_every_sink() -> None:
    app = App("sinks")
    doubled = app.topic("doubled", value_serde="int64")
    seen: list[int] = []

    @app.agent(app.topic("other", value_serde="int64"))
    async def other(stream):
        async for _ in stream:
            pass

    @app.agent(app.topic("numbers", value_serde="int64"), sink=[doubled, other, seen.append])
    async def double(stream):
        async for n in stream:
            yield n * 2
            if n == 2:
                yield -1  # two values for one record

    ctx = _run(app, "numbers", [n.to_bytes(8, "big") for n in (1, 2, 3)])
    expected = [2, 4, -1, 6]
    assert seen == expected
    for topic in ("doubled", "other"):
        got = [int.from_bytes(s.value, "big", signed=True) for s in ctx.sent if s.topic == topic]
        assert got == expected


def test_agent_send_writes_to_the_agents_topic() -> None:
    app = App("send")

    @app.agent(app.topic("audit", value_serde="str"))
    async def audit(stream):
        async for _ in stream:
            pass

    @app.agent(app.topic("in", value_serde="str"))
    async def forward(stream):
        async for line in stream:
            await audit.send(key=None, value=line.upper())

    ctx = _run(app, "in", [b"a", b"b"])
    assert [(s.topic, s.value) for s in ctx.sent] == [("audit", b"A"), ("audit", b"B")]
    assert repr(audit) == "Agent('audit', topic='audit')"


def test_a_generator_agent_that_stops_is_an_error_and_restarts() -> None:
    app = App("gen")
    seen: list[int] = []

    @app.agent(app.topic("in", value_serde="str"), sink=[seen.append])
    async def numbered(stream):
        n = 0
        async for value in stream:
            if value == "stop":
                return
            n += 1
            yield n

    ctx = FakeContext(TaskId(0, 0), application_id="gen")
    graph = graph_of(app.topology(), TaskId(0, 0), ctx)
    graph.process("in", 0, 0, 0, None, b"a")
    graph.process("in", 0, 1, 0, None, b"b")
    with pytest.raises(Exception, match="left its `async for` loop"):
        graph.process("in", 0, 2, 0, None, b"stop")
    graph.process("in", 0, 3, 0, None, b"c")  # a fresh run of the agent counts from 1 again
    assert seen == [1, 2, 1]


def test_a_sink_that_is_not_a_topic_agent_or_callable_is_refused() -> None:
    app = App("bad-sink")
    with pytest.raises(AgentError, match="a sink must be a topic, an agent or a callable"):

        @app.agent(app.topic("in"), sink=["not-a-topic"])  # type: ignore[list-item]
        async def agent(stream):
            async for value in stream:
                yield value


def test_an_agent_without_a_topic_reads_one_named_after_it_as_in_faust() -> None:
    app = App("auto")
    out = app.topic("out", value_serde="json")

    @app.agent()
    async def greet(stream):
        async for greeting in stream:
            await out.send(value={"hello": greeting["name"]})

    @app.agent("named-topic")
    async def named(stream):
        async for _ in stream:
            pass

    assert greet.topic.name == "auto-greet" and named.topic.name == "named-topic"
    ctx = _run(app, "auto-greet", [b'{"name":"ann"}'])
    assert [json.loads(s.value) for s in ctx.sent] == [{"hello": "ann"}]


def test_a_generator_agent_leaves_nothing_for_the_event_loop_to_close() -> None:
    """The driver owns the agent's generator: the loop's shutdown must not try (and fail) to `aclose()` it."""
    app = App("gen")
    seen: list[str] = []

    @app.agent(app.topic("in", value_serde="str"), sink=[seen.append])
    async def echo(stream):
        async for value in stream:
            yield value

    errors: list[str] = []

    async def main() -> None:
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context["message"]))
        _run(app, "in", [b"x"])

    asyncio.run(main())
    assert (seen, errors) == (["x"], [])
