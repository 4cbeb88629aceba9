"""Emit-final on the real broker: a windowed count behind `suppress(until_window_closes(...))` writes each
window's final count exactly once, also across a crash whose suppression buffer is rebuilt from its changelog.

The app runs exactly-once. Phase one closes some windows and leaves others in the buffer; after a commit
the client is killed (its threads cancelled: no clean close, nothing flushed or checkpointed) and a new
client with an empty state directory takes over. Phase two only adds records for later windows, so the
windows buffered before the crash are emitted after it only if the buffer came back from its changelog.
The expected counts are counted from the produced input.
"""

from __future__ import annotations

import asyncio
import struct
from collections import Counter
from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.serdes import StringSerde
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.suppressed import BufferConfig, Suppressed
from streamlet.topology.windows import TimeWindowedSerde, TimeWindows
from tests.support.clients import crash, wait_for_committed
from tests.support.kafka import KafkaTestCluster, Record, unique_name

pytestmark = pytest.mark.integration

SIZE, GRACE = 1_000, 500
KEYS = [f"user-{i}" for i in range(6)]
PARTITIONS = 2


def _topology(source: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE))
        .count("clicks")
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final"))
        .to_stream()
        .to(sink, key_serde=TimeWindowedSerde(StringSerde(), SIZE), value_serde="int64")
    )
    return builder.build()


def _clicks(windows: range) -> list[tuple[str, int]]:
    """(key, timestamp): key i clicks i+1 times in each window, in time order per key."""
    return [(key, window * SIZE + 50 * n + i) for window in windows for i, key in enumerate(KEYS) for n in range(i + 1)]


async def _produce(kafka: KafkaTestCluster, topic: str, clicks: list[tuple[str, int]]) -> None:
    # each key on one partition, so each task's stream time moves
    records = [Record(key, b"click", timestamp, KEYS.index(key) % PARTITIONS) for key, timestamp in clicks]
    await kafka.produce(topic, records)


def _expected(clicks: list[tuple[str, int]], closed_before: int) -> Counter[tuple[str, int]]:
    """Clicks per (key, window start) of the windows that closed: end + grace at most the key's partition's
    last timestamp (the task's stream time)."""
    stream_time = {p: max(ts for key, ts in clicks if KEYS.index(key) % PARTITIONS == p) for p in range(PARTITIONS)}
    counts = Counter((key, ts // SIZE * SIZE) for key, ts in clicks)
    return Counter(
        {
            (key, start): n
            for (key, start), n in counts.items()
            if start + SIZE + GRACE <= stream_time[KEYS.index(key) % PARTITIONS] and start < closed_before
        }
    )


async def _final_counts(kafka: KafkaTestCluster, sink: str, expected: int) -> list[tuple[str, int, int]]:
    records = await kafka.drain(sink, PARTITIONS, expected=expected, read_committed=True, timeout=60)
    await asyncio.sleep(2)  # anything more (a duplicate) would have been committed by now
    records = await kafka.drain(sink, PARTITIONS, read_committed=True, timeout=60)
    serde = TimeWindowedSerde(StringSerde(), SIZE)
    out = []
    for record in records:
        windowed = serde.deserialize(sink, record.key)
        assert windowed is not None
        out.append((windowed.key, windowed.window.start, struct.unpack(">q", record.value)[0]))
    return out


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        processing_guarantee="exactly_once_v2",
        commit_interval_ms=200,
    )  # type: ignore[arg-type]


async def test_each_window_final_count_is_written_once_across_a_crash(kafka: KafkaTestCluster, tmp_path: Path) -> None:
    source = await kafka.create_topic("clicks", partitions=PARTITIONS)
    sink = await kafka.create_topic("final-clicks", partitions=PARTITIONS)
    app_id = unique_name("suppress")
    for suffix in ("clicks-changelog", "final-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    topology = _topology(source, sink)

    # phase one: windows 0..4; stream time 4_2xx closes windows 0..2 (end + grace <= 4_000), 3 and 4 stay buffered
    first = _clicks(range(5))
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "a"))
    await client.start()
    try:
        await _produce(kafka, source, first)
        early = _expected(first, closed_before=5 * SIZE)
        assert {w for _, w in early} == {0, 1_000, 2_000}
        got = await _final_counts(kafka, sink, sum(1 for _ in early))
        assert Counter({(k, w): n for k, w, n in got}) == early and len(got) == len(early)
        # every click committed: the buffered windows 3 and 4 are in the committed changelog (the same transactions)
        await wait_for_committed(kafka, app_id, source, len(first))
    finally:
        await crash(client)
    buffered = await kafka.drain(f"{app_id}-final-store-changelog", PARTITIONS, read_committed=True)
    assert any(r.value is not None and r.key.endswith(struct.pack(">q", 3_000)) for r in buffered)

    # phase two, on a new client with no local state: only windows 7 and 8 get records
    second = _clicks(range(7, 9))
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "b"))
    await client.start()
    try:
        await _produce(kafka, source, second)
        expected = _expected(first + second, closed_before=9 * SIZE)
        assert {w for _, w in expected} == {0, 1_000, 2_000, 3_000, 4_000}  # 8_2xx closes no later one
        got = await _final_counts(kafka, sink, sum(1 for _ in expected))
    finally:
        await client.close()
    # every closed window exactly once, with its full count: windows 3 and 4 came out of the restored buffer
    assert len(got) == len(expected), sorted(got)
    assert Counter({(k, w): n for k, w, n in got}) == expected
