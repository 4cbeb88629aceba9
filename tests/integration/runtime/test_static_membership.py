"""Static membership on the real broker: a static member that closes keeps its place in the group (its tasks
wait for it), unless it leaves explicitly (`leave_group_on_close`, `streamlet worker --leave`)."""

from __future__ import annotations

import asyncio
import time

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration
SESSION_MS = 30_000


def owned(client: KafkaStreams) -> set[str]:
    return {str(t) for thread in client.threads for t in thread.task_manager.active}


async def until(condition, timeout: float) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise TimeoutError
        await asyncio.sleep(0.2)
    return time.monotonic() - start


@pytest.mark.parametrize("leave", [True, False])
async def test_a_static_member_leaves_only_when_asked(kafka: KafkaTestCluster, tmp_path, leave: bool) -> None:
    source = await kafka.create_topic("plaintext", partitions=4)
    sink = await kafka.create_topic("wordcount-output", partitions=4)
    app_id = unique_name("static")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")

    def client(i: int) -> KafkaStreams:
        config = StreamsConfig(
            application_id=app_id,
            bootstrap_servers=kafka.bootstrap_servers,
            state_dir=str(tmp_path / f"client-{i}"),
            session_timeout_ms=SESSION_MS,
            group_instance_id=f"client-{i}",
            leave_group_on_close=leave,
        )
        return KafkaStreams(build_topology(source, sink), config)

    staying, stopping = client(0), client(1)
    try:
        await staying.start()
        await stopping.start()
        await until(lambda: len(owned(staying)) == 4 and len(owned(stopping)) == 4, timeout=60)
        await stopping.close()
        if leave:
            moved_after = await until(lambda: len(owned(staying)) == 8, timeout=10)
            assert moved_after < 10
        else:
            await asyncio.sleep(8)  # well inside the session: the group waits for the member to come back
            assert len(owned(staying)) == 4
    finally:
        await staying.close()
        await stopping.close()
