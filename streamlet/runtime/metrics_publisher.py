"""The I/O half of client metrics: sample a client, append the event to `<application_id>-metrics`.

`ClientMetrics` gathers a `ClientSample` from the client's threads (their counters and consumers), its
restore tracker and its standbys' lags; the web server's `/metrics` samples it too. `MetricsPublisher` is
the client's owned background task: every interval it samples and produces one event, never on the
stream threads' path (a slow broker delays an event, never a record). Losing an event is logged and the
next one still goes out; on close it sends a last event, bounded, so a stopped client's final counts are
in the topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Protocol

from aiokafka import AIOKafkaProducer
from aiokafka.structs import TopicPartition

from streamlet.runtime.clients import MainConsumer
from streamlet.runtime.dropped_records import DroppedRecordsRates
from streamlet.runtime.metrics_event import ClientSample, ThreadSample, build_metrics_event
from streamlet.runtime.restore_listener import RestoreProgressTracker
from streamlet.runtime.task_creator import ThreadResources
from streamlet.runtime.task_manager import TaskManager
from streamlet.task_id import TaskId

log = logging.getLogger("streamlet.metrics")


class SampledThread(Protocol):
    """What sampling needs of a stream thread."""

    name: str
    task_manager: TaskManager
    consumer: MainConsumer
    resources: ThreadResources


def sample_thread(thread: SampledThread, since: float) -> ThreadSample:
    task_manager = thread.task_manager
    metrics = task_manager.metrics
    lags: dict[TopicPartition, int] = {}
    with contextlib.suppress(Exception):  # a stopped consumer has no assignment to report
        for tp in thread.consumer.assignment():
            lag = thread.consumer.lag(tp)
            if lag is not None:
                lags[tp] = lag
    return ThreadSample(
        name=thread.name,
        states=task_manager.task_states(),
        processed=dict(metrics.processed),
        not_running_s=dict(metrics.not_running_s),
        rebalances=metrics.rebalances,
        commits=metrics.commits,
        commit_total_s=metrics.commit_total_s,
        commit_latencies_s=metrics.commit_latencies_since(since),
        consumer_lags=lags,
        dropped={sensor.task_id: dict(sensor.counts) for sensor in thread.resources.dropped},
    )


class ClientMetrics:
    """Samples one client (`KafkaStreams`) for its metrics event and its Prometheus endpoint."""

    def __init__(
        self,
        application_id: str,
        process_id: str,
        host: str,
        interval_ms: int,
        threads: Callable[[], Sequence[SampledThread]],
        restore_progress: RestoreProgressTracker,
        standby_lags: Callable[[], Awaitable[Mapping[TopicPartition, int]]],
    ) -> None:
        self.application_id = application_id
        self.process_id = process_id
        self.host = host
        self.interval_ms = interval_ms
        self._threads = threads
        self._restore_progress = restore_progress
        self._standby_lags = standby_lags
        self._dropped_rates = DroppedRecordsRates(time.monotonic())

    async def sample(self, since: float | None = None, *, sequence: int = 0, timeout: float = 2.0) -> ClientSample:
        """The client now; commit latencies of the commits after `since` (monotonic; default one interval)."""
        try:
            # asyncio.timeout, not wait_for: 3.11's wait_for returns the lags when a cancel lands as they arrive, and
            # the publisher's loop, cancelled by close(), would then run on and close() wait for it forever
            async with asyncio.timeout(timeout):
                standby = dict(await self._standby_lags())
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the end offsets may be unreachable: report the rest
            log.debug("standby lags unavailable: %r", exc)
            standby = {}
        now = time.monotonic()
        if since is None:  # e.g. a scrape of /metrics: the last interval (5 s when no events are published)
            since = now - (self.interval_ms or 5000) / 1000.0
        threads = [sample_thread(t, since) for t in self._threads()]
        dropped: dict[TaskId, int] = {}
        for thread in threads:
            for task, counts in thread.dropped.items():
                dropped[task] = dropped.get(task, 0) + sum(counts.values())
        return ClientSample(
            application_id=self.application_id,
            process_id=self.process_id,
            host=self.host,
            timestamp_ms=int(time.time() * 1000),
            sequence=sequence,
            interval_ms=self.interval_ms,
            threads=threads,
            dropped_rates=self._dropped_rates.rates(now, dropped),
            restoring=self._restore_progress.in_progress(),
            restored_totals=self._restore_progress.restored_totals(),
            restored_bytes_totals=self._restore_progress.restored_bytes_totals(),
            standby_lags=standby,
            now=now,
        )


class MetricsPublisher:
    """Owned by the client: produces one metrics event every `interval_ms` until closed."""

    def __init__(self, metrics: ClientMetrics, topic: str, producer_factory: Callable[[], AIOKafkaProducer]) -> None:
        self.metrics = metrics
        self.topic = topic
        self._producer_factory = producer_factory
        self._producer: AIOKafkaProducer | None = None
        self._task: asyncio.Task[None] | None = None
        self._last = time.monotonic()
        self._failures = 0
        self._sequence = 0  # numbers the events: a reader sees a restarted client (it starts over) or a gap

    async def start(self) -> None:
        self._producer = self._producer_factory()
        await self._producer.start()
        self._last = time.monotonic()
        self._task = asyncio.create_task(self._run(), name=f"{self.topic}-publisher")

    async def _run(self) -> None:
        interval = self.metrics.interval_ms / 1000.0
        while True:
            await asyncio.sleep(interval)
            await self.publish_once()

    async def publish_once(self) -> None:
        """Sample and produce one event; a failure is logged (first and every 100th), never raised."""
        assert self._producer is not None
        try:
            self._sequence += 1
            sample = await self.metrics.sample(since=self._last, sequence=self._sequence)
            self._last = sample.now
            value = json.dumps(build_metrics_event(sample), sort_keys=True).encode()
            await self._producer.send_and_wait(self.topic, value=value, key=self.metrics.process_id.encode())
        except asyncio.CancelledError:
            raise
        except Exception:
            self._failures += 1
            if self._failures % 100 == 1:
                log.exception("publishing client metrics to %s failed (%d failures)", self.topic, self._failures)

    async def close(self, timeout: float = 5.0) -> None:
        """Stop the periodic task, send a last event (bounded by `timeout`), stop the producer."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self.publish_once()
        if self._producer is not None:
            try:
                async with asyncio.timeout(timeout):
                    await self._producer.stop()
            except TimeoutError:
                log.warning("the metrics producer did not stop within %.0fs", timeout)
            except Exception:
                log.exception("stopping the metrics producer failed")
            self._producer = None
