"""AssignmentHistoryWriter on a fake producer: events go out in order, a failed send loses only itself, and
closing is bounded even when the broker is gone (no Kafka)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from streamlet.runtime.assignment_history import AssignmentHistoryWriter


class _Producer:
    def __init__(self, fail_on: int | None = None, hang_on_stop: bool = False) -> None:
        self.sent: list[dict[str, Any]] = []
        self.fail_on = fail_on
        self.hang_on_stop = hang_on_stop
        self.calls = 0

    async def start(self) -> None:
        pass

    async def send_and_wait(self, topic: str, value: bytes, key: bytes) -> None:
        self.calls += 1
        if self.calls == self.fail_on:
            raise ConnectionError("broker down")
        assert topic == "app-assignments" and key == b"app"
        self.sent.append(json.loads(value))

    async def stop(self) -> None:
        if self.hang_on_stop:
            await asyncio.sleep(3600)


def _writer(producer: _Producer) -> AssignmentHistoryWriter:
    return AssignmentHistoryWriter("app-assignments", "app", "balanced", lambda: producer)  # type: ignore[arg-type,return-value]


async def test_events_are_sent_in_order_and_a_failed_send_loses_only_its_event() -> None:
    producer = _Producer(fail_on=2)
    writer = _writer(producer)
    await writer.start()
    for generation in (1, 2, 3):
        writer.record({"generation": generation})
    assert writer.previous_event() == {"generation": 3}
    await writer.close()
    assert [e["generation"] for e in producer.sent] == [1, 3]


async def test_close_is_bounded_when_the_producer_cannot_stop() -> None:
    writer = _writer(_Producer(hang_on_stop=True))
    await writer.start()
    began = asyncio.get_running_loop().time()
    await writer.close(timeout=0.2)
    assert asyncio.get_running_loop().time() - began < 2


def test_an_unstarted_writer_drops_events_without_raising() -> None:
    writer = _writer(_Producer())
    writer.record({"generation": 1})
    assert writer.previous_event() == {"generation": 1}
