"""`@app.timer` / `@app.crontab` without a broker: ticks, the designated-task rule, errors, and shutdown.

The client is a stand-in holding only what `owns_designated_task` reads: its threads' active tasks."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import pytest

from streamlet import App
from streamlet.errors import TopologyError
from streamlet.runtime.task_state import TaskState
from streamlet.task_id import TaskId
from streamlet.timers import DESIGNATED_TASK, TimerService, crontab_timer, interval_timer, owns_designated_task


@dataclass
class _Task:
    state: TaskState


@dataclass
class _Tasks:
    active: dict[TaskId, _Task] = field(default_factory=dict)


@dataclass
class _Thread:
    tasks: _Tasks = field(default_factory=_Tasks)


@dataclass
class _Client:
    threads: list[_Thread] = field(default_factory=lambda: [_Thread(), _Thread()])

    def own(self, state: TaskState | None) -> None:
        active = self.threads[1].tasks.active
        active.pop(DESIGNATED_TASK, None)
        if state is not None:
            active[DESIGNATED_TASK] = _Task(state)


def test_only_a_running_designated_task_makes_the_owner() -> None:
    client = _Client()
    assert not owns_designated_task(client)  # type: ignore[arg-type]
    client.threads[0].tasks.active[TaskId(0, 1)] = _Task(TaskState.RUNNING)
    client.own(TaskState.RESTORING)
    assert not owns_designated_task(client)  # type: ignore[arg-type]
    client.own(TaskState.RUNNING)
    assert owns_designated_task(client)  # type: ignore[arg-type]


async def test_leader_timers_tick_only_on_the_owner_and_others_everywhere() -> None:
    fired: list[str] = []

    async def leader() -> None:
        fired.append("leader")

    async def everywhere(app: Any) -> None:
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
        assert "leader" not in fired and fired.count("everywhere:the-app") >= 3
        client.own(TaskState.RUNNING)
        fired.clear()
        await asyncio.sleep(0.5)
        assert fired.count("leader") >= 3 and fired.count("everywhere:the-app") >= 3
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
    with caplog.at_level(logging.ERROR, logger="streamlet.timers"):
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
