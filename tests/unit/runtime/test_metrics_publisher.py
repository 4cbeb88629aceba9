"""MetricsPublisher on a fake producer: periodic events numbered in order, a failed send loses only itself,
a last event on close, and closing is bounded when the broker is gone (no Kafka)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from streamlet.runtime.metrics_publisher import ClientMetrics, MetricsPublisher
from streamlet.runtime.restore_listener import RestoreProgressTracker


class _Producer:
    def __init__(self, fail_on: int | None = None, hang: bool = False) -> None:
        self.sent: list[dict[str, Any]] = []
        self.fail_on = fail_on
        self.hang = hang
        self.calls = 0
        self.stopped = False

    async def start(self) -> None:
        pass

    async def send_and_wait(self, topic: str, value: bytes, key: bytes) -> None:
        self.calls += 1
        if self.hang:
            await asyncio.sleep(3600)
        if self.calls == self.fail_on:
            raise ConnectionError("broker down")
        assert topic == "app-metrics" and key == b"pid-1"
        self.sent.append(json.loads(value))

    async def stop(self) -> None:
        self.stopped = True


async def _no_standbys() -> dict:
    return {}


def _publisher(producer: _Producer, interval_ms: int) -> MetricsPublisher:
    metrics = ClientMetrics("app", "pid-1", "h:1", interval_ms, lambda: [], RestoreProgressTracker(), _no_standbys)
    return MetricsPublisher(metrics, "app-metrics", lambda: producer)  # type: ignore[arg-type,return-value]


async def test_events_go_out_every_interval_and_once_more_on_close() -> None:
    producer = _Producer(fail_on=2)
    publisher = _publisher(producer, interval_ms=20)
    await publisher.start()
    await asyncio.sleep(0.2)
    await publisher.close()
    sequences = [e["sequence"] for e in producer.sent]
    assert len(sequences) >= 3 and 2 not in sequences  # the failed send is lost, the next ones go out
    assert sequences == sorted(sequences) and sequences[0] == 1
    assert producer.calls == sequences[-1]  # the last one is the event sent on close
    assert all(e["type"] == "streamlet.metrics" and e["interval_ms"] == 20 for e in producer.sent)
    assert producer.stopped


async def test_close_is_bounded_when_the_broker_is_gone() -> None:
    producer = _Producer(hang=True)
    publisher = _publisher(producer, interval_ms=10)
    await publisher.start()
    await asyncio.sleep(0.05)  # the periodic send hangs
    began = asyncio.get_running_loop().time()
    await publisher.close(timeout=0.2)
    assert asyncio.get_running_loop().time() - began < 2 and producer.stopped


async def test_close_stops_the_loop_when_its_cancel_lands_as_the_standby_lags_arrive() -> None:
    """Python 3.11's asyncio.wait_for returned the lags and dropped the cancel when both came in one turn of the loop:
    the loop ran on and close() waited for it forever (a pure-Python unit run hung on this)."""
    lags: asyncio.Future[dict] = asyncio.get_running_loop().create_future()
    asked = asyncio.Event()

    async def standby_lags() -> dict:
        asked.set()
        return await lags

    producer = _Producer()
    metrics = ClientMetrics("app", "pid-1", "h:1", 10, lambda: [], RestoreProgressTracker(), standby_lags)
    publisher = MetricsPublisher(metrics, "app-metrics", lambda: producer)  # type: ignore[arg-type,return-value]
    await publisher.start()
    await asked.wait()  # the loop is sampling, waiting for the lags
    lags.set_result({})  # the lags arrive ...
    async with asyncio.timeout(5):  # ... and close() cancels the loop in the same turn
        await publisher.close(timeout=1)
    assert producer.stopped and [e["sequence"] for e in producer.sent] == [2]  # the loop's event never went out
