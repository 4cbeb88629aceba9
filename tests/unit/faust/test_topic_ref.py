"""TopicRef.send: serdes from types, the record timestamp that sent records carry, and sends outside agents."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

import pytest

from streamlet import App
from streamlet.faust.agent_context import AgentError, task_context
from streamlet.faust.topic_ref import TopicRef
from streamlet.models import Record
from streamlet.runtime.record_context import RecordContext
from streamlet.task_id import TaskId
from tests.unit.runtime._support import FakeContext


class Click(Record):
    user: str


@dataclass
class _TaskLike(FakeContext):
    record_context: RecordContext = field(default_factory=RecordContext)


def _send(ctx: FakeContext, topic: TopicRef, **record: object) -> None:
    token = task_context.set(ctx)  # type: ignore[arg-type]
    try:
        asyncio.run(topic.send(**record))  # type: ignore[arg-type]
    finally:
        task_context.reset(token)


def test_sent_records_carry_the_input_records_timestamp() -> None:
    ctx = _TaskLike(TaskId(0, 0))
    ctx.record_context.timestamp = 1_700_000_000_123
    _send(ctx, TopicRef("out", key_type=str, value_type=Click), key="ann", value=Click("ann"))
    (sent,) = ctx.sent
    assert (sent.key, sent.value, sent.timestamp) == (b"ann", b'{"user":"ann"}', 1_700_000_000_123)


def test_without_a_record_timestamp_the_wall_clock_not_zero() -> None:
    ctx = FakeContext(TaskId(0, 0))
    before = int(time.time() * 1000)
    _send(ctx, TopicRef("out", value_serde="str"), value="x")
    assert before <= ctx.sent[0].timestamp <= int(time.time() * 1000)


async def test_send_outside_agents_needs_a_running_app() -> None:
    app = App("sends")
    with pytest.raises(AgentError, match="send.. to topic t outside an agent needs a running App"):
        await app.topic("t", value_serde="str").send(value="x")
    with pytest.raises(AgentError, match="send.. to topic t can only be used inside an agent"):
        await TopicRef("t", value_serde="str").send(value="x")  # not declared on an App
