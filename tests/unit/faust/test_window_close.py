"""Faust's `on_window_close` on the TopologyTestDriver (real RocksDB stores): when windows close (stream time at
end + grace, grace = expires - size), out-of-order records within grace, late records dropped, hopping windows
closing in order; and, on random input, the same final counts as the DSL's `suppress(until_window_closes)`,
which the semantics oracle proves against Kafka Streams."""

from __future__ import annotations

import asyncio
import random
import struct
from datetime import timedelta
from typing import Any

import pytest

from streamlet import App, BufferConfig, Suppressed, TimeWindows
from streamlet.errors import TopologyError
from streamlet.faust.agents import AgentError
from streamlet.serdes import StringSerde
from streamlet.testing import TopologyTestDriver
from streamlet.topology.windows import TimeWindowedSerde


def _faust_app(window: Any = None) -> App:
    """Clicks per user; each closed window goes to `closed` as `[start s, end s, count]`."""
    app = App("closing")
    closed = app.topic("closed", key_type=str, value_serde="json")

    async def write_final(key: Any, value: int) -> None:
        user, (start, end) = key
        await closed.send(key=user, value=[start, end, value])

    table = app.Table("clicks", key_type=str, value_type=int, default=int, on_window_close=write_final)
    clicks = window(table) if window else table.tumbling(60, expires=timedelta(seconds=70))  # 10 s grace

    seen = app.topic("seen", key_type=str, value_serde="json")

    @app.agent(app.topic("in", key_type=str, value_serde="str"), tables=[clicks])
    async def count(stream):
        async for user, _ in stream.items():
            clicks[user] += 1
            await seen.send(key=user, value=clicks[user].current())  # what the table holds now

    return app


def _run(
    app: App, records: list[tuple[str, int]], seen: list[int] | None = None, cache_bytes: int = 0
) -> list[list[Any]]:
    """Pipe `(user, timestamp ms)`; after each record, what `closed` got: `[user, start, end, count]`
    (and into `seen`, the count the agent read back in the record's window)."""
    with TopologyTestDriver(app, {"statestore_cache_max_bytes": cache_bytes}) as driver:
        source = driver.create_input_topic("in", "str", "str")
        out = driver.create_output_topic("closed", "str", "json")
        counts = driver.create_output_topic("seen", "str", "json")
        steps = []
        for user, timestamp in records:
            source.pipe_input(user, "click", timestamp=timestamp)
            steps.append([[key, *value] for key, value in out.read_key_values_to_list()])
            if seen is not None:
                seen.extend(value for _, value in counts.read_key_values_to_list())
        return steps


def test_a_window_closes_when_stream_time_reaches_its_end_plus_grace() -> None:
    steps = _run(_faust_app(), [("u", 10_000), ("v", 59_999), ("u", 69_999), ("v", 70_000), ("u", 70_001)])
    assert steps == [
        [],
        [],
        [],  # 69.999 s: window [0, 60) has 10 s of grace left but 1 ms
        [["u", 0.0, 59.9, 1], ["v", 0.0, 59.9, 1]],  # 70 s = end + grace: closed, each key once, in key order
        [],  # never again
    ]


def test_out_of_order_records_within_grace_count_and_late_ones_are_dropped() -> None:
    seen: list[int] = []
    steps = _run(
        _faust_app(),
        [
            ("u", 10_000),
            ("u", 65_000),  # window [60, 120)
            ("u", 55_000),  # out of order, within grace (60 + 10 > 65): window 0 has 2
            ("u", 71_000),  # closes window 0
            ("u", 30_000),  # late: window 0 is closed; dropped, nothing changes
            ("u", 130_000),  # closes window 60 (120 + 10 <= 130): 2 records
        ],
        seen,
    )
    assert steps == [[], [], [], [["u", 0.0, 59.9, 2]], [], [["u", 60.0, 119.9, 2]]]
    assert seen == [1, 1, 2, 2, 2, 1]  # the late record left window 0 at 2


def test_hopping_windows_close_in_order_of_their_end() -> None:
    app = _faust_app(lambda table: table.hopping(60, 30, expires=70))  # grace 10 s
    steps = _run(app, [("v", 40_000), ("u", 45_000), ("u", 65_000), ("u", 100_000), ("u", 160_000)])
    assert steps[:3] == [[], [], []]  # 65 s: [0, 60) closes at 70
    # 100 s closes [0, 60) (60 + 10 <= 100) and [30, 90) (90 + 10 <= 100): in window order, then key order
    assert steps[3] == [["u", 0.0, 59.9, 1], ["v", 0.0, 59.9, 1], ["u", 30.0, 89.9, 2], ["v", 30.0, 89.9, 1]]
    # 160 s closes [60, 120) (u at 65 and 100) and [90, 150) (u at 100)
    assert steps[4] == [["u", 60.0, 119.9, 2], ["u", 90.0, 149.9, 1]]


def test_on_window_close_needs_a_windowed_table_and_may_await_only_sends() -> None:
    app = App("closing")
    table = app.Table("clicks", default=int, on_window_close=print)

    @app.agent(app.topic("in"), tables=[table])
    async def count(stream):
        async for _ in stream:
            pass

    with pytest.raises(TopologyError, match="on_window_close but no windows"):
        app.topology()

    app = App("closing")

    async def sleepy(key: Any, value: Any) -> None:
        await asyncio.sleep(0)  # not a streamlet operation: it would suspend the task

    clicks = app.Table("clicks", default=int, on_window_close=sleepy).tumbling(1, expires=1)

    @app.agent(app.topic("in", key_type=str, value_serde="str"), tables=[clicks])
    async def count2(stream):
        async for user, _ in stream.items():
            clicks[user] += 1

    with TopologyTestDriver(app) as driver:
        source = driver.create_input_topic("in", "str", "str")
        source.pipe_input("u", "x", timestamp=100)
        with pytest.raises(AgentError, match="table clicks: on_window_close awaited"):
            source.pipe_input("u", "x", timestamp=5_000)  # closes window [0, 1 s)


def _dsl_app() -> App:
    app = App("closing-dsl")
    (
        app.stream("in", key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(60_000, 10_000))
        .count("clicks")
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()))
        .to_stream()
        .to("closed", key_serde=TimeWindowedSerde(StringSerde(), 60_000), value_serde="int64")
    )
    return app


@pytest.mark.parametrize(("seed", "cache_bytes"), [(seed, 0) for seed in range(4)] + [(4, 10 << 20), (5, 10 << 20)])
def test_the_same_final_counts_as_the_dsls_emit_final(seed: int, cache_bytes: int) -> None:
    """With and without the record cache in front of the window store (the closing reads through it)."""
    rng = random.Random(seed)
    records = []
    for i in range(600):  # one every 2 s with up to 15 s of disorder: some records are late
        records.append((rng.choice("abcd"), max(0, i * 2_000 + rng.randrange(-15_000, 2_000))))
    faust = [tuple(out) for step in _run(_faust_app(), records, cache_bytes=cache_bytes) for out in step]
    with TopologyTestDriver(_dsl_app(), {"statestore_cache_max_bytes": 0}) as driver:
        source = driver.create_input_topic("in", "str", "str")
        out = driver.create_output_topic("closed", None, None)
        for user, timestamp in records:
            source.pipe_input(user, "click", timestamp=timestamp)
        dsl = [
            (key[:-8].decode(), struct.unpack(">q", key[-8:])[0] / 1000, struct.unpack(">q", value)[0])
            for key, value in out.read_key_values_to_list()
        ]
    assert len(dsl) > 60
    assert [(user, start, n) for user, start, _end, n in faust] == dsl
