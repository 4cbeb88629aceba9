"""Faust's windowed tables on the TopologyTestDriver (real RocksDB window stores): which window each of
`current()`, `now()`, `delta(d)` and `value()` reads, tumbling and hopping, the relative-to variants,
expiry, and the errors. Expected values are worked out by hand from the windows in each comment."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from streamlet import App, Record
from streamlet.errors import TopologyError
from streamlet.faust.agents import AgentError
from streamlet.faust.windowed_tables import WindowWrapper
from streamlet.testing import TopologyTestDriver


class Click(Record):
    user: str
    at: float  # seconds: what relative_to_field reads


def _app(windowed: object = None, **window: object) -> tuple[App, WindowWrapper]:
    app = App("windowed")
    table = app.Table("clicks", key_type=str, value_type=int, default=int)
    wrapper = windowed(table) if callable(windowed) else table.tumbling(60, **window)  # type: ignore[arg-type]
    out = app.topic("out", key_type=str, value_serde="json")

    @app.agent(app.topic("in", key_type=str, value_type=Click), tables=[wrapper])
    async def count(stream):
        async for user, _click in stream.items():
            wrapper[user] += 1
            w = wrapper[user]
            await out.send(key=user, value=[w.current(), w.now(), w.delta(60), w.value()])

    return app, wrapper


def _run(app: App, records: list[tuple[str, int, float]]) -> list[tuple[str, list[int]]]:
    """Pipe `(user, timestamp ms, at seconds)` records; every output `(user, [current, now, delta(60), value])`."""
    with TopologyTestDriver(app, {"statestore_cache_max_bytes": 0}) as driver:
        source = driver.create_input_topic("in", "str", "json")
        out = driver.create_output_topic("out", "str", "json")
        for user, timestamp, at in records:
            source.pipe_input(user, {"user": user, "at": at}, timestamp=timestamp)
        return out.read_key_values_to_list()


def test_tumbling_windows_current_now_delta_value() -> None:
    app, _ = _app()
    outputs = _run(
        app,
        [
            ("u", 10_000, 0),  # window [0, 60 s): u=1; no window 60 s before
            ("u", 70_000, 0),  # window [60, 120): u=1; 60 s before is window 0 (1)
            ("u", 20_000, 0),  # out of order, window 0: u=2; now = the newest window (60 s): 1
            ("v", 130_000, 0),  # window [120, 180): v=1, which is also the partition's newest
            ("u", 130_001, 0),  # window 120: u=1; 60 s before: window 60 (1)
            ("u", 20_500, 0),  # window 0 again: u=3; now: window 120 (u=1)
        ],
    )
    assert outputs == [
        ("u", [1, 1, 0, 1]),
        ("u", [1, 1, 1, 1]),
        ("u", [2, 1, 0, 2]),
        ("v", [1, 1, 0, 1]),
        ("u", [1, 1, 1, 1]),
        ("u", [3, 1, 0, 3]),
    ]


def test_hopping_windows_update_every_window_of_the_record() -> None:
    app, _ = _app(lambda table: table.hopping(60, 30))
    outputs = _run(
        app,
        [
            ("u", 40_000, 0),  # windows [0, 60) and [30, 90): 1 and 1; latest is 30; 60 s before: none
            ("u", 50_000, 0),  # same windows: 2 and 2
            ("u", 65_000, 0),  # windows [30, 90) = 3 and [60, 120) = 1; delta(60) = ts 5 s: window 0 = 2
        ],
    )
    assert outputs == [("u", [1, 1, 0, 1]), ("u", [2, 2, 0, 2]), ("u", [1, 1, 2, 1])]


def test_relative_to_field_writes_and_values_by_the_field_current_by_the_record() -> None:
    app, _ = _app(lambda table: table.tumbling(60).relative_to_field(Click.at))
    outputs = _run(
        app,
        [
            ("u", 10_000, 200.0),  # written in window [180, 240) by `at`; current (record: window 0) is empty
            ("u", 70_000, 230.5),  # window 180 again: 2; now = window 180 (the newest written); record window 60
        ],
    )
    assert outputs == [("u", [0, 1, 0, 1]), ("u", [0, 2, 0, 2])]


def test_relative_to_a_fixed_time_and_to_now() -> None:
    fixed = datetime(1970, 1, 1, 0, 5, tzinfo=UTC)  # 300 s: window [300, 360)
    app, _ = _app(lambda table: table.tumbling(60).relative_to(fixed))
    # at 400 s: current is window 360 (empty); delta(60) = 340 s is the fixed window 300
    assert _run(app, [("u", 10_000, 0), ("u", 400_000, 0)]) == [("u", [0, 1, 0, 1]), ("u", [0, 2, 2, 2])]

    app, _ = _app(lambda table: table.tumbling(60).relative_to_now())
    outputs = _run(
        app,
        [
            ("u", 70_000, 0),  # nothing written yet: "now" is the record's window (60)
            ("u", 10_000, 0),  # written to the partition's newest window (60), not the record's (0)
            ("v", 130_000, 0),  # the newest is still window 60, so v lands there (which is also delta(60))
        ],
    )
    assert outputs == [("u", [1, 1, 0, 1]), ("u", [0, 2, 0, 2]), ("v", [0, 1, 1, 1])]


@pytest.mark.parametrize(("expires", "old_window"), [(120, 0), (600, 1)])
def test_windows_expire_after_expires(expires: int, old_window: int) -> None:
    app = App("windowed")
    table = app.Table("clicks", key_type=str, value_type=int, default=int).tumbling(60, expires=expires)
    out = app.topic("out", key_type=str, value_serde="json")

    @app.agent(app.topic("in", key_type=str, value_serde="json"), tables=[table])
    async def count(stream):
        async for user, _ in stream.items():
            table[user] += 1
            await out.send(key=user, value=table[user].delta(300))

    with TopologyTestDriver(app, {"statestore_cache_max_bytes": 0}) as driver:
        source = driver.create_input_topic("in", "str", "json")
        outputs = driver.create_output_topic("out", "str", "json")
        source.pipe_input("u", 1, timestamp=1_000)
        source.pipe_input("u", 1, timestamp=301_000)  # 300 s later: window 0 is kept 120 s (gone) or 600 s
        assert [v for _, v in outputs.read_key_values_to_list()] == [0, old_window]


def test_set_and_delete_act_on_the_windows_of_the_relative_time() -> None:
    app = App("windowed")
    table = app.Table("clicks", key_type=str, value_type=int).hopping(60, 30)
    out = app.topic("out", key_type=str, value_serde="json")

    @app.agent(app.topic("in", key_type=str, value_type=int), tables=[table])
    async def last(stream):
        async for user, value in stream.items():
            if value < 0:
                del table[user]
            else:
                table[user] = value
            try:
                await out.send(key=user, value=[table[user].current(), table[user].delta(30)])
            except KeyError as missing:  # no default: a missing window is a KeyError naming it
                await out.send(key=user, value=str(missing))

    with TopologyTestDriver(app, {"statestore_cache_max_bytes": 0}) as driver:
        source = driver.create_input_topic("in", "str", "int64")
        outputs = driver.create_output_topic("out", "str", "json")
        source.pipe_input("u", 7, timestamp=40_000)  # windows 0 and 30 set to 7; delta(30) = ts 10 s: window 0
        source.pipe_input("u", -1, timestamp=45_000)  # both deleted
        assert [v for _, v in outputs.read_key_values_to_list()] == [[7, 7], "('u', (30000, 90000))"]


async def test_misuse_is_a_clear_error() -> None:
    app = App("windowed")
    table = app.Table("clicks", default=int)
    wrapper = table.tumbling(60)
    with pytest.raises(TopologyError, match="already windowed"):
        table.hopping(60, 30)
    assert table.tumbling(60.0).windows == wrapper.windows  # the same spec again is fine
    with pytest.raises(TopologyError, match="is windowed: read and write it through"):
        table["k"]
    with pytest.raises(AgentError, match="table clicks can only be used inside an agent"):
        wrapper["k"].current()
    for bad, match in [
        (lambda t: t.tumbling(0), "must be positive"),
        (lambda t: t.hopping(10, 20), "step .20. cannot exceed its size"),
        (lambda t: t.tumbling(60, expires=30), "expires .30. must be at least the window size"),
        (lambda t: t.tumbling("1m"), "must be seconds"),
    ]:
        with pytest.raises(TopologyError, match=match):
            bad(app.Table(f"t{len(match)}"))


def test_keys_items_and_values_read_one_window_per_key_as_faust_views() -> None:
    app = App("windowed-views")
    table = app.Table("clicks", key_type=str, value_type=int, default=int)  # a key without the window: 0
    wrapper = table.tumbling(60)
    out = app.topic("out", key_type=str, value_serde="json")

    @app.agent(app.topic("in", key_type=str, value_type=Click), tables=[wrapper])
    async def count(stream):
        async for user, _click in stream.items():
            wrapper[user] += 1
            items = wrapper.items()
            await out.send(
                key=user,
                value={
                    "items": sorted(items),
                    "now": sorted(items.now()),
                    "delta": sorted(wrapper.items().delta(60)),
                    "keys": sorted(wrapper.keys().current()),
                    "values": sorted(wrapper.values()),
                },
            )

    outputs = _run(app, [("u", 10_000, 0), ("v", 15_000, 0), ("u", 70_000, 0), ("u", 20_000, 0)])  # type: ignore[arg-type]
    assert [value for _, value in outputs] == [  # type: ignore[comparison-overlap]
        # window [0, 60): u=1; 60 s before is no window (the default)
        {"items": [["u", 1]], "now": [["u", 1]], "delta": [["u", 0]], "keys": ["u"], "values": [1]},
        # window [0, 60): u=1, v=1
        {
            "items": [["u", 1], ["v", 1]],
            "now": [["u", 1], ["v", 1]],
            "delta": [["u", 0], ["v", 0]],
            "keys": ["u", "v"],
            "values": [1, 1],
        },
        # u in window [60, 120), which v has not; 60 s before is window 0 (u=1, v=1); now is window 60
        {
            "items": [["u", 1], ["v", 0]],
            "now": [["u", 1], ["v", 0]],
            "delta": [["u", 1], ["v", 1]],
            "keys": ["u", "v"],
            "values": [0, 1],
        },
        # out of order, window 0: u=2 there; now is still window 60
        {
            "items": [["u", 2], ["v", 1]],
            "now": [["u", 1], ["v", 0]],
            "delta": [["u", 0], ["v", 0]],
            "keys": ["u", "v"],
            "values": [1, 2],
        },
    ]
