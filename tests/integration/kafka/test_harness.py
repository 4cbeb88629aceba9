"""The test harness itself, on the real broker: topics, keyed produce, per-partition order, end offsets."""

from __future__ import annotations

import pytest

from streamlet.kafka.broker import broker_answers
from tests.support.kafka import KafkaTestCluster, by_partition

pytestmark = pytest.mark.integration


async def test_broker_answers_metadata(bootstrap_servers: str) -> None:
    host, port = bootstrap_servers.rsplit(":", 1)
    assert broker_answers(host, int(port))


async def test_create_topic_with_partitions(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("harness", partitions=4)
    described = await kafka.admin.describe_topics([topic])
    assert sorted(p["partition"] for p in described[0]["partitions"]) == [0, 1, 2, 3]


async def test_keyed_records_come_back_in_order_per_partition(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("harness", partitions=3)
    sent = [(f"key-{i % 5}".encode(), f"value-{i}".encode()) for i in range(200)]
    await kafka.produce(topic, sent)

    records = await kafka.drain(topic, 3)
    assert len(records) == len(sent)
    partitions_of_key: dict[bytes, set[int]] = {}
    for record in records:
        partitions_of_key.setdefault(record.key, set()).add(record.partition)
    # the default partitioner hashes the key: one partition per key
    assert all(len(parts) == 1 for parts in partitions_of_key.values())
    # within a partition, each key's values keep the order they were sent in
    for part_records in by_partition(records).values():
        offsets = [r.offset for r in part_records]
        assert offsets == sorted(offsets)
        for key in {r.key for r in part_records}:
            got = [r.value for r in part_records if r.key == key]
            assert got == [v for k, v in sent if k == key]


async def test_end_offsets_count_records_per_partition(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("harness", partitions=2)
    await kafka.produce(topic, [(None, b"a")] * 7, partition=0)
    await kafka.produce(topic, [(None, b"b")] * 3, partition=1)
    assert await kafka.end_offsets(topic, 2) == {0: 7, 1: 3}


async def test_topics_are_unique_per_test(kafka: KafkaTestCluster) -> None:
    first = await kafka.create_topic("same")
    second = await kafka.create_topic("same")
    assert first != second


def test_a_broker_tied_to_its_parent_dies_with_it(tmp_path) -> None:
    """A killed test run must not leave a broker JVM behind."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from streamlet.kafka.broker import _pid_alive

    script = (
        "import sys, time\n"
        "from streamlet.kafka.broker import LocalBroker\n"
        f"status = LocalBroker({str(tmp_path / 'b')!r}, die_with_parent=True).start()\n"
        "print(status.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        broker_pid = int(parent.stdout.readline())
        assert _pid_alive(broker_pid)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 30
        while _pid_alive(broker_pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _pid_alive(broker_pid), "the broker outlived the process that started it"
    finally:
        if parent.poll() is None:
            parent.kill()
