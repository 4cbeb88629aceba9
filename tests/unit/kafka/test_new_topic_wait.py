"""A topic created just before start-up that the answering broker does not know yet is looked for again, briefly."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import MissingTopicError
from streamlet.kafka.topics import InternalTopicManager


class LaggingAdmin:
    """describe_topics knows `topic` from its `known_after`-th call on (a broker the controller reaches late)."""

    def __init__(self, topic: str, known_after: int) -> None:
        self.topic, self.known_after, self.calls = topic, known_after, 0

    async def describe_topics(self, names: list[str]) -> list[dict[str, Any]]:
        self.calls += 1
        known = self.calls >= self.known_after
        return [
            {"topic": n, "error_code": 0, "partitions": [{}, {}]}
            if n != self.topic or known
            else {"topic": n, "error_code": 3}
            for n in names
        ]

    async def close(self) -> None:
        pass


def _manager(admin: LaggingAdmin) -> InternalTopicManager:
    manager = InternalTopicManager(StreamsConfig("a").cluster)
    manager._admin = admin  # type: ignore[assignment]
    return manager


async def test_a_topic_the_broker_learns_of_late_is_found() -> None:
    admin = LaggingAdmin("in", known_after=3)
    assert await _manager(admin).require_source_topics(["in", "other"]) == {"in": 2, "other": 2}
    assert admin.calls == 3


async def test_a_topic_that_does_not_exist_is_an_error_after_the_wait() -> None:
    admin = LaggingAdmin("in", known_after=10**9)
    started = asyncio.get_running_loop().time()
    with pytest.raises(MissingTopicError, match="source topic.* in do not exist"):
        await _manager(admin).require_source_topics(["in"])
    assert admin.calls > 1 and asyncio.get_running_loop().time() - started < 10


async def test_no_wait_when_every_topic_is_there() -> None:
    admin = LaggingAdmin("in", known_after=1)
    assert await _manager(admin).existing_topics(["in"]) == {"in": 2}
    assert admin.calls == 1
