"""A topic the application writes that does not exist: one clear error naming it, never a rejoin loop.

Topics the topology and the agents name are checked at start-up, as source topics are; a topic only known
when a record is sent fails the thread at that send.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from streamlet import App
from streamlet.errors import MissingTopicError
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration


def _config(kafka: KafkaTestCluster, tmp_path: Any, app_id: str, **extra: Any) -> dict[str, Any]:
    return {"bootstrap_servers": kafka.bootstrap_servers, "state_dir": str(tmp_path), "commit_interval_ms": 200} | extra


async def _start_fails(client: KafkaStreams) -> str:
    try:
        with pytest.raises(MissingTopicError) as caught:
            await asyncio.wait_for(client.start(), timeout=60)
    finally:
        await client.close()
    return str(caught.value)


async def test_a_dsl_sink_topic_is_checked_at_start(kafka: KafkaTestCluster, tmp_path: Any) -> None:
    source = await kafka.create_topic("lines", partitions=1)
    missing = unique_name("no-such-output")
    app = App(unique_name("missing-dsl-sink"))
    app.stream(source, key_serde="str", value_serde="str").map_values(str.upper).to(missing)
    message = await _start_fails(app.streams(**_config(kafka, tmp_path, app.application_id)))
    assert f"sink topic(s) do not exist: {missing} (written by sink node KSTREAM-SINK-0000000002)" in message
    assert "streamlet topics create" in message


async def test_a_topic_an_agent_sends_to_is_checked_at_start(kafka: KafkaTestCluster, tmp_path: Any) -> None:
    source = await kafka.create_topic("orders", partitions=1)
    missing = unique_name("no-such-totals")
    app = App(unique_name("missing-agent-sink"))
    orders = app.topic(source, key_type=str, value_type=str)
    totals = app.topic(missing, key_type=str, value_type=str)

    @app.agent(orders)
    async def forward(stream: Any) -> None:
        async for order in stream:
            await totals.send(key=order, value=order)

    message = await _start_fails(app.streams(**_config(kafka, tmp_path, app.application_id)))
    assert f"{missing} (written by agent " in message and "forward)" in message


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
async def test_a_topic_known_only_at_send_fails_once_clearly(
    kafka: KafkaTestCluster, tmp_path: Any, guarantee: str
) -> None:
    source = await kafka.create_topic("orders", partitions=1)
    missing = unique_name("no-such-dynamic")
    app = App(unique_name("missing-dynamic-sink"))
    orders = app.topic(source, key_type=str, value_type=str)
    by_kind = {"totals": app.topic(missing, key_type=str, value_type=str)}  # not visible to the start-up check

    @app.agent(orders)
    async def route(stream: Any) -> None:
        async for order in stream:
            await by_kind["totals"].send(key=order, value=order)

    for suffix in ("assignments", "metrics"):
        kafka.track(f"{app.application_id}-{suffix}")
    await kafka.produce(source, [(b"k", b"ann")])
    client = app.streams(**_config(kafka, tmp_path, app.application_id, processing_guarantee=guarantee))
    await client.start()
    try:
        with pytest.raises(MissingTopicError, match=rf"topic {missing} does not exist, and a task writes"):
            await asyncio.wait_for(client.wait(), timeout=60)
        rebalances = sum(thread.task_manager.metrics.rebalances for thread in client.threads)
        assert rebalances <= 1, f"the thread rejoined {rebalances} times instead of failing"
    finally:
        await client.close()
