"""`@app.timer` / `@app.crontab` without a broker: ticks, the designated-task rule, errors, and shutdown.

The client is a stand-in holding only what the timer service uses: its threads, each of which runs a
punctuation of the designated task only while it owns it (`StreamThread.run_as_punctuation`)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from streamlet import App
from streamlet.errors import TopologyError
from streamlet.faust.agent_context import current_context, task_context
from streamlet.faust.timers import DESIGNATED_TASK, TimerService, crontab_timer, interval_timer
from streamlet.task_id import TaskId


@dataclass
class _Task:
    task_id: TaskId


@dataclass
class _Thread:
    owned: _Task | None = None

    async def run_as_punctuation(self, task_id: TaskId, body: Callable[[Any], Awaitable[None]]) -> bool:
        if self.owned is None or self.owned.task_id != task_id:
            return False
        await body(self.owned)
        return True


@dataclass
class _Client:
    threads: list[_Thread] = field(default_factory=lambda: [_Thread(), _Thread()])

    def own(self) -> None:
        self.threads[1].owned = _Task(DESIGNATED_TASK)


async def test_leader_timers_tick_only_on_the_owner_and_others_everywhere() -> None:
    fired: list[str] = []

    async def leader() -> None:
        fired.append(f"leader in {current_context('test').task_id}")  # the designated task is its task

    async def everywhere(app: Any) -> None:
        assert task_context.get() is None  # outside every task
        fired.append(f"everywhere:{app}")

    client = _Client()
    service = TimerService(
        [
            interval_timer(leader, 0.05, on_leader=True, name="leader"),
            interval_timer(everywhere, 0.05, on_leader=False, name="everywhere"),
        ],
        "the-app",
        client,  # type: ignore[arg-type]
    )
    service.start()
    try:
        await asyncio.sleep(0.5)  # 10 ticks; a loaded machine may run fewer
        assert fired and set(fired) == {"everywhere:the-app"}
        client.own()
        fired.clear()
        await asyncio.sleep(0.5)
        assert fired.count("leader in 0_0") >= 3 and fired.count("everywhere:the-app") >= 3
    finally:
        await service.stop()
    fired.clear()
    await asyncio.sleep(0.12)
    assert fired == []  # stopped: cancelled and awaited


async def test_a_timer_that_raises_is_logged_and_ticks_again(caplog: pytest.LogCaptureFixture) -> None:
    runs: list[int] = []

    async def flaky() -> None:
        runs.append(1)
        raise RuntimeError("boom")

    service = TimerService([interval_timer(flaky, 0.05, on_leader=False, name="flaky")], None, _Client())  # type: ignore[arg-type]
    with caplog.at_level(logging.ERROR, logger="streamlet.faust.timers"):
        service.start()
        await asyncio.sleep(0.3)
        await service.stop()
    assert len(runs) >= 2
    assert "timer flaky raised; it runs again at its next tick" in caplog.text and "boom" in caplog.text


def test_the_interval_is_kept_from_the_first_tick() -> None:
    async def job() -> None: ...

    timer = interval_timer(job, 10, on_leader=True, name="job")
    assert timer.next_delay() == 10.0
    assert 9.9 < timer.next_delay() <= 10.0  # the next multiple of 10 s since the first call


def test_a_crontab_waits_until_its_next_minute() -> None:
    async def job() -> None: ...

    for zone in (None, "Europe/Paris"):
        delay = crontab_timer(job, "* * * * *", timezone=zone, on_leader=True, name="job").next_delay()
        assert 0 < delay <= 60


def test_bad_timers_are_errors_when_declared() -> None:
    app = App("timers")

    def not_async() -> None: ...

    async def two(a: Any, b: Any) -> None: ...

    async def fine() -> None: ...

    with pytest.raises(TopologyError, match="'not_async' must be an `async def` function"):
        app.timer(1)(not_async)
    with pytest.raises(TopologyError, match="may take the App as its only argument"):
        app.crontab("* * * * *")(two)
    with pytest.raises(TopologyError, match="the interval must be positive"):
        app.timer(0)(fine)
    with pytest.raises(ValueError, match="must have 5 fields"):
        app.crontab("* * *")(fine)
