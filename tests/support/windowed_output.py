"""Reading what a windowed count wrote (Kafka's TimeWindowedSerde keys, int64 counts), and checking it against
the PySpark batch job (`streamlet.spark.windowed_count`), for the end-to-end windowed tests."""

from __future__ import annotations

import asyncio
import collections
import struct
import subprocess
import sys

from tests.support.kafka import KafkaTestCluster
from tests.support.workers import ROOT

Window = tuple[str, int]  # (key, window start)


async def emitted_windows(
    kafka: KafkaTestCluster, topic: str, partitions: int, *, at_least: int, timeout: float, read_committed: bool = False
) -> dict[Window, list[int]]:
    """Every count written per window, in order, once at least `at_least` are there (or at the timeout)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        out: dict[Window, list[int]] = collections.defaultdict(list)
        for record in await kafka.drain(topic, partitions, read_committed=read_committed):
            out[(record.key[:-8].decode(), struct.unpack(">q", record.key[-8:])[0])].append(
                struct.unpack(">q", record.value)[0]
            )
        if sum(map(len, out.values())) >= at_least or asyncio.get_running_loop().time() > deadline:
            return dict(out)
        await asyncio.sleep(1)


def spark_verdict(
    kafka: KafkaTestCluster, source: str, sink: str, *, size_ms: int, field: str, closed_before: int
) -> str:
    """Run the PySpark batch job over the input and the output; its report (it must succeed)."""
    verify = subprocess.run(
        [
            sys.executable,
            *("-m", "streamlet.spark.windowed_count", "--bootstrap-servers", kafka.bootstrap_servers),
            *("--input-topic", source, "--output-topic", sink, "--size-ms", str(size_ms), "--field", field),
            *("--closed-before", str(closed_before)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    return verify.stdout
