"""A client's threads leave the group only once every one has made its final commit (`CommitBarrier`), on the
real broker.

The test forces the interleaving the barrier exists for: thread `a` makes its final commit first, and thread
`b`'s final commit waits until then. Were `a` to leave the group now, the broker would start a rebalance; `b`'s
member learns of it from its next heartbeat and starts rejoining, and the join waits for `b`'s lock, which `b`'s
shutdown holds. So `b`'s commit would find its member rejoining and not be sent (Kafka's `generationIfStable`),
and a restarted client would process `b`'s records again. With the barrier, `a` stays in the group until `b` has
committed, so when `close()` returns every processed record's offset is committed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.kafka.group.membership import MemberState
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

RECORDS = 20  # per input partition


async def _committed(kafka: KafkaTestCluster, group: str, topic: str) -> dict[int, int]:
    offsets = await kafka.admin.list_consumer_group_offsets(group)
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}


async def test_no_thread_leaves_before_the_others_final_commits(
    kafka: KafkaTestCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = await kafka.create_topic("in", partitions=2)
    sink = await kafka.create_topic("out", partitions=2)
    app_id = unique_name("commit-barrier")
    builder = StreamsBuilder()
    builder.stream(source).to(sink)
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path),
        num_stream_threads=2,
        commit_interval_ms=600_000,  # no periodic commit: the final commits are the only ones
        heartbeat_interval_ms=200,  # a member learns of a rebalance soon
    )
    client = KafkaStreams(builder.build(), config)
    try:
        await client.start()
        a, b = client.threads
        await wait_until(lambda: a.task_manager.active and b.task_manager.active, "each thread to own a task")
        for partition in (0, 1):
            await kafka.produce(source, [(b"k", str(i).encode()) for i in range(RECORDS)], partition=partition)
        await kafka.drain(sink, 2, expected=2 * RECORDS)  # both threads processed their records
        assert await _committed(kafka, app_id, source) == {}  # nothing committed yet

        a_committed = a_leaving = False
        a_shutdown, a_stop, b_shutdown = a.task_manager.shutdown, a.consumer.stop, b.task_manager.shutdown

        async def a_commits(clean: bool) -> None:
            nonlocal a_committed
            await a_shutdown(clean)
            a_committed = True

        async def a_leaves() -> None:
            nonlocal a_leaving
            a_leaving = True
            await a_stop()

        async def b_commits_last(clean: bool) -> None:
            await wait_until(lambda: a_committed, "thread a's final commit")
            # from a's final commit to its leave nothing suspends a but the barrier: by now a is either held there
            # or leaving the group
            if a_leaving:
                membership = b.consumer.membership
                await wait_until(lambda: membership.state is not MemberState.STABLE, "b's member to rejoin")
            await b_shutdown(clean)

        monkeypatch.setattr(a.task_manager, "shutdown", a_commits)
        monkeypatch.setattr(a.consumer, "stop", a_leaves)
        monkeypatch.setattr(b.task_manager, "shutdown", b_commits_last)
    finally:
        await client.close()
    assert a_committed and a_leaving
    assert await _committed(kafka, app_id, source) == {0: RECORDS, 1: RECORDS}
