"""The processes of one group tell each other where they stand in event time, through `<application_id>-event-time`.

`StreamTimeWatermark` keeps a client's threads together while they replay a backlog; the processes of a group
write the same repartition topics, so they must keep together too (issue 23: two processes of one thread each
dropped 46 % of a backlog as late, one process 0 %). Every `interval_ms` each process produces its threads'
lowest position per merged sub-topology (`StreamTimeWatermark.local_positions`), keyed by its process id, to one
partition; it reads the others' from the log end at its start and hands them to its watermark
(`report_process`), which bounds its threads as it bounds them by their siblings. An empty report (caught up)
holds nobody back; a process that stops sends one, a process that dies is ignored once its report is stale.

One small JSON record per process per interval, whether catching up or not: that is also how a process knows
it has peers to wait for after an assignment. The record is a version, the process id, the positions, the group
generation all the process's threads have applied and the partitions of their active tasks per merged
sub-topology (a process waits, after an assignment, until the others report that generation, and on its first,
until they own the tasks it does not: `StreamTimeWatermark.assignment_applied`); bytes that do not parse are
skipped with a warning (never unpickled). A report without a generation (a process of an earlier release, or one
that stops) is not waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.structs import TopicPartition

from streamlet.runtime.stream_time_watermark import StreamTimeWatermark

log = logging.getLogger("streamlet.event_time")

#: the topic's configs: the last minutes are all that is read (a reader starts at the log end)
TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": str(10 * 60 * 1000), "segment.ms": str(60 * 1000)}
_VERSION = 1


def _moved(before: dict[int, int], now: dict[int, int], step: int) -> bool:
    return before.keys() != now.keys() or any(abs(now[k] - before[k]) >= step for k in now)


def event_time_topic(application_id: str) -> str:
    return f"{application_id}-event-time"


def encode_positions(
    process: str,
    positions: dict[int, int],
    generation: int | None = None,
    tasks: dict[int, list[int]] | None = None,
) -> bytes:
    report: dict[str, Any] = {"v": _VERSION, "process": process, "positions": {str(k): v for k, v in positions.items()}}
    if generation is not None:
        report["generation"] = generation
    if tasks is not None:
        report["tasks"] = {str(k): v for k, v in tasks.items()}
    return json.dumps(report).encode()


def _is_integer(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def decode_positions(value: bytes | None) -> tuple[str, dict[int, int], int | None, dict[int, list[int]] | None]:
    """(process, positions, generation, tasks); ValueError for anything that is not a report of this version."""
    if value is None:
        raise ValueError("no value")
    data: Any = json.loads(value)
    if not isinstance(data, dict) or data.get("v") != _VERSION or not isinstance(data.get("process"), str):
        raise ValueError("not an event-time report of version 1")
    raw = data.get("positions")
    if not isinstance(raw, dict) or not all(_is_integer(v) for v in raw.values()):
        raise ValueError("positions must map sub-topology ids to integer timestamps")
    generation = data.get("generation")
    if generation is not None and not _is_integer(generation):
        raise ValueError("the generation must be an integer")
    tasks = data.get("tasks")
    if tasks is not None and (
        not isinstance(tasks, dict)
        or not all(isinstance(p, list) and all(_is_integer(i) for i in p) for p in tasks.values())
    ):
        raise ValueError("tasks must map sub-topology ids to lists of partitions")
    try:
        return (
            data["process"],
            {int(k): v for k, v in raw.items()},
            generation,
            None if tasks is None else {int(k): v for k, v in tasks.items()},
        )
    except ValueError:
        raise ValueError("sub-topology ids must be integers") from None


class EventTimeExchange:
    """Owned by the client: publishes its watermark's local positions and feeds it the other processes'."""

    def __init__(
        self,
        watermark: StreamTimeWatermark,
        topic: str,
        process_id: str,
        interval_ms: int,
        producer_factory: Callable[[], AIOKafkaProducer],
        consumer_factory: Callable[[], AIOKafkaConsumer],
    ) -> None:
        self._watermark = watermark
        self.topic = topic
        self._process = process_id
        self._interval_s = interval_ms / 1000
        self._producer_factory = producer_factory
        self._consumer_factory = consumer_factory
        self._producer: AIOKafkaProducer | None = None
        self._consumer: AIOKafkaConsumer | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._failures = 0
        self._skipped = 0

    async def start(self) -> None:
        self._producer = self._producer_factory()
        await self._producer.start()
        self._consumer = self._consumer_factory()
        await self._consumer.start()
        tp = TopicPartition(self.topic, 0)
        self._consumer.assign([tp])
        await self._consumer.seek_to_end(tp)
        # a report needs two intervals to reach another process at worst; hold that long after an assignment
        self._watermark.hold_ms = round(self._interval_s * 2000) + 200
        self._tasks = [
            asyncio.create_task(self._publish_loop(), name=f"{self.topic}-publisher"),
            asyncio.create_task(self._read_loop(), name=f"{self.topic}-reader"),
        ]

    async def _publish_loop(self) -> None:
        """A report every interval, and at once when a position moved by an eighth of the drift or a sub-topology
        started or stopped catching up: processes that wait for each other advance at the pace of the broker's
        round trip, not of the interval."""
        published: tuple[dict[int, int], int, dict[int, list[int]]] | None = None
        last = 0.0
        step = max(1, self._watermark.drift_ms // 8)
        while True:
            positions = self._watermark.local_positions()
            generation = self._watermark.local_generation()
            tasks = self._watermark.local_tasks()
            now = time.monotonic()
            if (
                published is None
                or now - last >= self._interval_s
                or generation != published[1]
                or tasks != published[2]
                or _moved(published[0], positions, step)
            ):
                await self.publish(positions, generation, tasks)
                published, last = (positions, generation, tasks), now
            await self._watermark.changed(self._interval_s)

    async def publish(
        self, positions: dict[int, int], generation: int | None = None, tasks: dict[int, list[int]] | None = None
    ) -> None:
        """Produce one report; a failure is logged (first and every 100th), never raised."""
        assert self._producer is not None
        report = encode_positions(self._process, positions, generation, tasks)
        try:
            await self._producer.send_and_wait(self.topic, report, key=self._process.encode(), partition=0)
        except asyncio.CancelledError:
            raise
        except Exception:
            self._failures += 1
            if self._failures % 100 == 1:
                log.exception("publishing event-time positions to %s failed (%d failures)", self.topic, self._failures)

    async def _read_loop(self) -> None:
        assert self._consumer is not None
        while True:
            try:
                batches = await self._consumer.getmany(timeout_ms=round(self._interval_s * 1000))
            except asyncio.CancelledError:
                raise
            except Exception:  # the broker is away: the others' reports go stale and stop holding this one back
                self._failures += 1
                if self._failures % 100 == 1:
                    log.exception("reading %s failed (%d failures)", self.topic, self._failures)
                await asyncio.sleep(self._interval_s)
                continue
            for records in batches.values():
                for record in records:
                    self._receive(record.value)

    def _receive(self, value: bytes | None) -> None:
        try:
            process, positions, generation, tasks = decode_positions(value)
        except ValueError as exc:
            self._skipped += 1
            if self._skipped % 100 == 1:
                log.warning("skipped a record of %s that is not an event-time report: %s", self.topic, exc)
            return
        if process != self._process:
            self._watermark.report_process(process, positions, generation, tasks)

    async def close(self, timeout: float = 5.0) -> None:
        """Cancel the loops, tell the others this process holds nobody back any more (bounded), stop the clients."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            _, pending = await asyncio.wait(self._tasks, timeout=timeout)
            if pending:
                log.warning("the event-time exchange's %d tasks did not stop within %.0fs", len(pending), timeout)
        self._tasks = []
        if self._producer is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.publish({}, None, {}), timeout)
            await _stop(self._producer.stop(), "producer", timeout)
            self._producer = None
        if self._consumer is not None:
            await _stop(self._consumer.stop(), "consumer", timeout)
            self._consumer = None


async def _stop(stopping: Any, what: str, timeout: float) -> None:
    try:
        await asyncio.wait_for(stopping, timeout)
    except TimeoutError:
        log.warning("the event-time %s did not stop within %.0fs", what, timeout)
    except Exception:
        log.exception("stopping the event-time %s failed", what)
