"""`agent.ask()` without a broker: the request headers, the agent's replies from its task, and the clear errors."""

from __future__ import annotations

import json

import pytest

from streamlet import App, Record
from streamlet.faust.agents import AgentError
from streamlet.faust.replies import CORRELATION_ID_HEADER, REPLY_TO_HEADER, reply_serde, reply_target
from streamlet.runtime.processor_graph import build_task_graph
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from tests.unit.runtime._support import FakeContext


class Total(Record):
    key: str
    total: int


def _doubler(app: App) -> object:
    @app.agent(app.topic("numbers", key_serde="str", value_serde="json"), sink=[app.topic("audit", value_serde="json")])
    async def double(stream):
        async for value in stream:
            if value >= 0:  # a negative number gets no answer
                yield value * 2

    return double


def _process(app: App, records: list[tuple[object, list[tuple[str, bytes]]]]) -> FakeContext:
    """Run partition 0 of the `numbers` task on `(value, headers)` records, as a StreamTask sets its context."""
    ctx = FakeContext(TaskId(0, 0), application_id=app.application_id)
    ctx.record_context = RecordContext()  # type: ignore[attr-defined]
    graph = build_task_graph(TopicNames(app.topology(), app.application_id), TaskId(0, 0), ctx, ctx.record_context)
    for offset, (value, headers) in enumerate(records):
        ctx.record_context.headers = headers
        graph.process("numbers", 0, offset, 5_000 + offset, b"k", json.dumps(value).encode())
    return ctx


def _asked(correlation_id: bytes, reply_to: str = "app-reply-1") -> list[tuple[str, bytes]]:
    return [("other", b"x"), (REPLY_TO_HEADER, reply_to.encode()), (CORRELATION_ID_HEADER, correlation_id)]


def test_reply_target_reads_both_headers_or_nothing() -> None:
    assert reply_target(_asked(b"c1", "t")) == ("t", b"c1")
    assert reply_target([(REPLY_TO_HEADER, b"t")]) is None
    assert reply_target([(CORRELATION_ID_HEADER, b"c1")]) is None
    assert reply_target(()) is None


def test_reply_serde_is_a_models_json_or_plain_json() -> None:
    data = reply_serde(Total).serialize("r", Total(key="a", total=3))
    assert json.loads(data) == {"key": "a", "total": 3}
    assert reply_serde(Total).deserialize("r", data) == Total(key="a", total=3)
    assert reply_serde(None).deserialize("r", data) == {"key": "a", "total": 3}
    assert reply_serde(int).serialize("r", 7) == b"7"


def test_an_agent_replies_to_each_request_with_what_it_yields_and_still_feeds_its_sinks() -> None:
    app = App("asks")
    _doubler(app)
    ctx = _process(app, [(1, _asked(b"c1")), (2, []), (-1, _asked(b"c3")), (4, _asked(b"c4", "app-reply-2"))])
    sent = [(s.topic, s.key, s.value, s.timestamp, s.partition) for s in ctx.sent]
    assert sent == [
        ("audit", None, b"2", 5_000, None),
        ("app-reply-1", b"c1", b"2", 5_000, 0),
        ("audit", None, b"4", 5_001, None),  # nobody asked: no reply
        ("audit", None, b"8", 5_003, None),  # -1 yielded nothing: no reply (its asker times out)
        ("app-reply-2", b"c4", b"8", 5_003, 0),
    ]


async def test_ask_outside_a_running_app_says_how_to_run_it() -> None:
    app = App("asks")
    double = _doubler(app)
    with pytest.raises(AgentError, match=r"ask\(\) outside an agent needs a running App.*app.client\(\)"):
        await double.ask(1)


async def test_ask_inside_an_agent_is_an_error_naming_send() -> None:
    app = App("asks")
    double = _doubler(app)

    @app.agent(app.topic("questions", value_serde="json"))
    async def asker(stream):
        async for value in stream:
            await double.ask(value)

    ctx = FakeContext(TaskId(1, 0), application_id="asks")
    graph = build_task_graph(TopicNames(app.topology(), "asks"), TaskId(1, 0), ctx)
    with pytest.raises(AgentError, match=r"double: ask\(\) cannot be awaited inside an agent.*use send\(\)"):
        graph.process("questions", 0, 0, 0, None, b"1")


async def test_channel_and_rekeying_agents_cannot_be_asked() -> None:
    app = App("asks")
    channel = app.channel("memo")

    @app.agent(channel)
    async def remember(stream):
        async for value in stream:
            yield value

    @app.agent(app.topic("words", value_serde="str"))
    async def by_word(stream):
        async for word in stream.group_by(lambda w: w, name="by-word"):
            yield word

    async with app.client():
        with pytest.raises(AgentError, match="remember reads channel memo, in memory: it cannot be asked"):
            await remember.ask("x")
        with pytest.raises(AgentError, match=r"by_word re-keys its stream \(group_by\)"):
            await by_word.ask("x")
