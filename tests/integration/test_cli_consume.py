"""`streamlet consume` on the real broker prints a windowed count's output topic with its windows."""

from __future__ import annotations

import asyncio
import struct
import sys

import pytest

from streamlet.serdes import StringSerde
from streamlet.topology.session_windows import SessionWindow, SessionWindowedSerde
from streamlet.topology.windows import TimeWindow, TimeWindowedSerde, Windowed
from tests.support.kafka import KafkaTestCluster

pytestmark = pytest.mark.integration


async def _consume(kafka: KafkaTestCluster, topic: str, *flags: str) -> str:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "streamlet.cli",
        "consume",
        topic,
        "--bootstrap-servers",
        kafka.bootstrap_servers,
        "--idle-timeout",
        "2",
        *flags,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=60)
    assert proc.returncode == 0, err.decode()
    return out.decode()


async def test_time_windowed_keys(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("windowed-counts", partitions=1)
    serde = TimeWindowedSerde(StringSerde(), 60_000)
    keys = [Windowed("ann", TimeWindow(0, 60_000)), Windowed("bob", TimeWindow(60_000, 120_000))]
    await kafka.produce(topic, [(serde.serialize(topic, k), struct.pack(">q", n)) for n, k in enumerate(keys, 1)])
    out = await _consume(kafka, topic, "--key-serde", "windowed:str", "--window-size", "1m", "--value-serde", "int64")
    assert out.splitlines() == ["ann@[0,60000)\t1", "bob@[60000,120000)\t2"]


async def test_session_windowed_keys(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("session-counts", partitions=1)
    serde = SessionWindowedSerde(StringSerde())
    key = serde.serialize(topic, Windowed("ann", SessionWindow(1_000, 4_000)))
    await kafka.produce(topic, [(key, struct.pack(">q", 3))])
    out = await _consume(kafka, topic, "--key-serde", "session:str", "--value-serde", "int64")
    assert out.splitlines() == ["ann@[1000,4000)\t3"]
