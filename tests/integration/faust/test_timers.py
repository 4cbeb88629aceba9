"""`@app.timer` on the real broker with two workers: an `on_leader` timer ticks on exactly one of them (the
owner of task 0_0, which each worker's agent reports as it processes partition 0), an `on_leader=False`
timer ticks on both, and both stop with their worker. The leader timer's `topic.send` runs in task 0_0 and is
written with its output: the topic holds one record per leader tick."""

from __future__ import annotations

import asyncio
import collections

import pytest

from streamlet import App
from streamlet.faust.agent_context import current_context
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

INTERVAL = 0.5


def _worker(app_id: str, topic: str, label: str, ticks: list[tuple[str, str]], seen: dict[int, str]) -> App:
    app = App(app_id)
    sent = app.topic(f"{topic}-sent", value_serde="str")

    @app.agent(app.topic(topic, value_serde="str"))
    async def note(stream):
        async for _ in stream:
            seen[current_context("test").task_id.partition] = label  # who runs each partition now

    @app.timer(INTERVAL)
    async def once_per_app() -> None:
        ticks.append(("leader", label))
        await sent.send(value=label)

    @app.timer(INTERVAL, on_leader=False)
    async def on_every_worker() -> None:
        ticks.append(("every", label))

    return app


async def test_a_leader_timer_ticks_on_exactly_one_of_two_workers(kafka: KafkaTestCluster, tmp_path) -> None:
    topic = await kafka.create_topic("ticks", partitions=2)
    await kafka.create_topic(name=f"{topic}-sent")
    app_id = unique_name("timers")
    ticks: list[tuple[str, str]] = []
    all_leader_ticks = 0
    seen: dict[int, str] = {}
    apps = {label: _worker(app_id, topic, label, ticks, seen) for label in ("a", "b")}
    runs: dict[str, asyncio.Task[None]] = {}
    config = {"bootstrap_servers": kafka.bootstrap_servers, "session_timeout_ms": 10_000}
    try:
        runs["a"] = asyncio.create_task(apps["a"].run_worker(state_dir=str(tmp_path / "a"), **config))
        await wait_until(lambda: ("leader", "a") in ticks, "worker a's first leader tick", 60)
        runs["b"] = asyncio.create_task(apps["b"].run_worker(state_dir=str(tmp_path / "b"), **config))

        async def each_runs_a_partition() -> bool:
            seen.clear()
            await kafka.produce(topic, [(None, b"x")], partition=0)
            await kafka.produce(topic, [(None, b"x")], partition=1)
            await asyncio.sleep(1.0)
            return set(seen.values()) == {"a", "b"}

        deadline = asyncio.get_running_loop().time() + 90
        while not await each_runs_a_partition():
            assert asyncio.get_running_loop().time() < deadline, f"the workers never split the partitions: {seen}"
        owner = seen[0]
        all_leader_ticks += sum(1 for kind, _ in ticks if kind == "leader")
        ticks.clear()
        await asyncio.sleep(8 * INTERVAL)
        counts = collections.Counter(ticks)
        assert {label for kind, label in counts if kind == "leader"} == {owner}, counts
        assert counts[("leader", owner)] >= 5
        assert counts[("every", "a")] >= 5 and counts[("every", "b")] >= 5
    finally:
        for label, run in runs.items():
            apps[label].stop_worker()
            await asyncio.wait_for(run, 60)
    all_leader_ticks += sum(1 for kind, _ in ticks if kind == "leader")
    sent = await kafka.drain(f"{topic}-sent", 1)
    assert len(sent) == all_leader_ticks and {r.value for r in sent} <= {b"a", b"b"}
    ticks.clear()
    await asyncio.sleep(3 * INTERVAL)
    assert ticks == []  # the timers stopped with their workers
