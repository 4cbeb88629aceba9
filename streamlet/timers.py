"""`@app.timer(interval)` and `@app.crontab("0 * * * *")`: periodic jobs of a worker, as Faust has them.

Each timer is an asyncio task the App starts when its worker's client is up and cancels (and awaits) when the
worker stops. Unlike an agent's body, a timer runs outside every task, so it may await anything (a sleep, an
HTTP call, `agent.ask(...)`).

`on_leader=True` (the default here) runs a timer once per application rather than once per worker: at each
tick, only the worker whose RUNNING active tasks include the designated task `0_0` (the first partition of
the first sub-topology, which every topology has and which the assignor gives to exactly one client) runs
it. That plays the part of Faust's group leader, and moves with the task when it moves. While the task is
moving (revoked here, not yet running there) a tick runs nowhere. `on_leader=False` runs it on every worker,
as Faust's default does.

A timer that raises is logged with its traceback and runs again at its next tick, as a Faust timer's error
does not stop the worker.
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

from streamlet.cron import CronSchedule
from streamlet.errors import TopologyError
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.task_state import TaskState
from streamlet.task_id import TaskId

__all__ = [
    "DESIGNATED_TASK",
    "Timer",
    "TimerService",
    "crontab_timer",
    "interval_timer",
    "owns_designated_task",
]

log = logging.getLogger("streamlet.timers")

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


def owns_designated_task(streams: KafkaStreams) -> bool:
    """Whether `DESIGNATED_TASK` is a RUNNING active task of one of this client's stream threads."""
    for thread in streams.threads:
        task = thread.tasks.active.get(DESIGNATED_TASK)
        if task is not None and task.state is TaskState.RUNNING:
            return True
    return False


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
            if timer.on_leader and not owns_designated_task(self._streams):
                continue
            try:
                await (timer.fn(self._app) if timer.takes_app else timer.fn())
            except Exception:
                log.exception("timer %s raised; it runs again at its next tick", timer.name)
