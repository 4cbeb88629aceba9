"""`await agent.ask(...)` on the real broker: a worker runs the agent, a client App asks it, replies come back.

The worker and the caller are two App instances of the same definition, as two processes would be. Each
answer is the running total the agent's table holds for the asked key, which the test computes itself from
what it asked, in order.
"""

from __future__ import annotations

import asyncio
import collections

import pytest

from streamlet import App, Record
from streamlet.faust.agents import Agent
from streamlet.faust.replies import AskTimeoutError
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration


class Total(Record):
    key: str
    total: int


def _app(app_id: str, topic: str) -> tuple[App, Agent]:
    app = App(app_id, commit_interval_ms=200)
    totals = app.Table("totals", key_type=str, value_type=int, default=int)

    @app.agent(app.topic(topic, key_type=str, value_type=int), tables=[totals])
    async def add(stream):
        async for key, amount in stream.items():
            if amount < 0:
                continue  # no answer: its asker times out
            totals[key] += amount
            yield Total(key=key, total=totals[key])

    return app, add


async def test_a_client_asks_a_workers_agent_and_gets_each_answer(kafka: KafkaTestCluster, tmp_path) -> None:
    topic = await kafka.create_topic("amounts", partitions=3)
    app_id = unique_name("ask")
    kafka.track(f"{app_id}-totals-changelog")
    worker_app, _ = _app(app_id, topic)
    caller_app, add = _app(app_id, topic)
    worker = worker_app.streams(bootstrap_servers=kafka.bootstrap_servers, state_dir=str(tmp_path / "w"))
    await worker.start()
    try:
        async with caller_app.client(bootstrap_servers=kafka.bootstrap_servers):
            keys = [f"k{i % 5}" for i in range(40)]
            expected: collections.Counter[str] = collections.Counter()
            for i, key in enumerate(keys[:20]):  # one at a time: each answer is the total so far
                expected[key] += i
                answer = await add.ask(i, key=key, reply_type=Total, timeout=60)
                assert answer == Total(key=key, total=expected[key])
            # concurrently, one key each: every answer reaches its own asker
            concurrent = {f"c{i}": 100 + i for i in range(20)}
            answers = await asyncio.gather(*(add.ask(v, key=k, timeout=60) for k, v in concurrent.items()))
            assert answers == [{"key": k, "total": v} for k, v in concurrent.items()]
            with pytest.raises(AskTimeoutError, match=r"agent add did not reply within 2 s"):
                await add.ask(-1, key="k0", timeout=2)
            (reply_topic,) = [t for t in await kafka.admin.list_topics() if t.startswith(f"{app_id}-reply-")]
        for _ in range(50):  # topic deletion is asynchronous on the broker
            if reply_topic not in set(await kafka.admin.list_topics()):
                break
            await asyncio.sleep(0.2)
        else:
            pytest.fail(f"the reply topic {reply_topic} outlived its App")
    finally:
        await worker.close()
