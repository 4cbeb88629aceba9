"""`@app.timer(interval)` and `@app.crontab("0 * * * *")`: periodic jobs of a worker, as Faust has them.

Each timer is an asyncio task the App starts when its worker's client is up and cancels (and awaits) when the
worker stops; it keeps the timer's schedule.

`on_leader=True` (the default here) runs a timer once per application rather than once per worker, and in a
task: at each tick, only the worker whose stream thread processes the designated task `0_0` (the first
partition of the first sub-topology, which every topology has and which the assignor gives to exactly one
client) runs it, as a wall-clock punctuation of that task (`StreamThread.run_as_punctuation`). That plays the
part of Faust's group leader and moves with the task. Like an agent's body, the tick then sees task `0_0` as
its task: `table[key]` reads and writes that task's stores, and `await topic.send(...)` queues a record in
its output, stamped with the tick's time; all of it commits with the task (under exactly-once, in its
transaction: a crash before that commit loses the whole tick, never part of it, and a committed tick is
never redone). The stream thread waits while a tick runs, as Kafka Streams' waits for a punctuator, and
`agent.ask()` cannot be awaited there. While the task is moving (revoked here, not yet running there) a
tick runs nowhere. `on_leader=False` runs the timer on every worker, outside every task, as Faust's default
does: it may await anything, and its sends go at once through the App's producer.

A timer that raises is logged with its traceback and runs again at its next tick, as a Faust timer's error
does not stop the worker (what a leader tick wrote before it raised still commits, as a punctuator's would).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo

from streamlet.errors import TopologyError
from streamlet.faust.agent_context import task_context
from streamlet.faust.cron import CronSchedule
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.stream_task import StreamTask
from streamlet.task_id import TaskId

__all__ = [
    "DESIGNATED_TASK",
    "Timer",
    "TimerService",
    "crontab_timer",
    "interval_timer",
]

log = logging.getLogger("streamlet.faust.timers")

#: the task whose owner runs the `on_leader` timers
DESIGNATED_TASK = TaskId(0, 0)


@dataclass(frozen=True)
class Timer:
    """A periodic job: `fn` (called with the App if it takes an argument), and the seconds until its next run."""

    name: str
    fn: Callable[..., Any]
    on_leader: bool
    next_delay: Callable[[], float]
    takes_app: bool


def _check_fn(fn: Callable[..., Any], what: str) -> bool:
    """Whether `fn` takes the App; it must be `async def` with no parameter or one."""
    if not inspect.iscoroutinefunction(fn):
        raise TopologyError(f"{what} {getattr(fn, '__name__', fn)!r} must be an `async def` function")
    required = [
        p
        for p in inspect.signature(fn).parameters.values()
        if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if len(required) > 1:
        raise TopologyError(f"{what} {fn.__name__!r} may take the App as its only argument, or nothing")
    return len(required) == 1


def interval_timer(fn: Callable[..., Any], interval: float | timedelta, *, on_leader: bool, name: str) -> Timer:
    """Every `interval` seconds, the first `interval` after the start; a run that overruns skips missed ticks."""
    seconds = interval.total_seconds() if isinstance(interval, timedelta) else float(interval)
    if seconds <= 0:
        raise TopologyError(f"timer {name}: the interval must be positive, got {interval!r}")
    takes_app = _check_fn(fn, "timer")
    origin: dict[str, float] = {}

    def next_delay() -> float:  # to the next multiple of the interval since the first call
        now = time.monotonic()
        return seconds - ((now - origin.setdefault("t", now)) % seconds)

    return Timer(name, fn, on_leader, next_delay, takes_app)


def crontab_timer(
    fn: Callable[..., Any], expression: str, *, timezone: tzinfo | str | None, on_leader: bool, name: str
) -> Timer:
    """At each time `expression` matches, in `timezone` (default UTC; a name such as "Europe/Paris" or a tzinfo)."""
    schedule = CronSchedule.parse(expression)
    zone: tzinfo = ZoneInfo(timezone) if isinstance(timezone, str) else timezone or ZoneInfo("UTC")
    takes_app = _check_fn(fn, "crontab")

    def next_delay() -> float:
        now = datetime.now(zone)
        return max(0.0, schedule.next_after(now).timestamp() - now.timestamp())

    return Timer(name, fn, on_leader, next_delay, takes_app)


class TimerService:
    """A worker's timers: one owned task each, from `start()` until `stop()` cancels and awaits them."""

    def __init__(self, timers: list[Timer], app: Any, streams: KafkaStreams) -> None:
        self._timers = timers
        self._app = app
        self._streams = streams
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._run(t), name=f"streamlet-timer-{t.name}") for t in self._timers]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def _run(self, timer: Timer) -> None:
        while True:
            await asyncio.sleep(timer.next_delay())
            try:
                if timer.on_leader:
                    await self._tick_in_designated_task(timer)
                else:
                    await self._call(timer)
            except Exception:
                log.exception("timer %s raised; it runs again at its next tick", timer.name)

    async def _call(self, timer: Timer) -> None:
        await (timer.fn(self._app) if timer.takes_app else timer.fn())

    async def _tick_in_designated_task(self, timer: Timer) -> None:
        """On the thread that processes `DESIGNATED_TASK`, as its punctuation; nowhere if no thread here does."""

        async def in_task(task: StreamTask) -> None:
            token = task_context.set(task)
            try:
                await self._call(timer)
            finally:
                task_context.reset(token)

        for thread in self._streams.threads:
            if await thread.run_as_punctuation(DESIGNATED_TASK, in_task):
                return
