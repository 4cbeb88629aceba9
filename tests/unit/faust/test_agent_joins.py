"""Faust-style joins of an agent's stream, run on the TopologyTestDriver (the App's own topology): stream-table,
stream-global table and windowed stream-stream joins, their nulls, missing keys and window edges, and what
cannot be joined."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from streamlet import App, JoinWindows
from streamlet.errors import TopologyError
from streamlet.models import Record
from streamlet.testing import TopologyTestDriver


class Order(Record):
    customer: str
    amount: int


def _agent(app: App, topic: Any, join: Any, *, items: bool = False) -> list[Any]:
    """An agent that records what its joined stream yields."""
    seen: list[Any] = []

    @app.agent(topic)
    async def enrich(stream):  # type: ignore[no-untyped-def]
        joined = join(stream)
        async for item in joined.items() if items else joined:
            seen.append(item)

    return seen


@pytest.mark.parametrize("left", [False, True])
def test_stream_table_join_looks_up_the_records_key(left: bool) -> None:
    app = App("shop")
    customers = app.table("customers", "str", "str", store_name="customers")
    orders = app.topic("orders", key_serde="str", value_serde="json")
    seen = _agent(app, orders, lambda s: s.left_join(customers) if left else s.join(customers), items=True)
    with TopologyTestDriver(app) as driver:
        table = driver.create_input_topic("customers", "str", "str")
        stream = driver.create_input_topic("orders", "str", "json")
        table.pipe_input("ann", "Ann Lee", timestamp=1)
        stream.pipe_input("ann", {"n": 1}, timestamp=2)
        stream.pipe_input("bob", {"n": 2}, timestamp=3)  # no such customer
        table.pipe_input("bob", "Bob Ray", timestamp=4)  # a table update emits nothing
        stream.pipe_input("bob", {"n": 3}, timestamp=5)
        table.pipe_input("ann", None, timestamp=6)  # deleted
        stream.pipe_input("ann", {"n": 4}, timestamp=7)
        stream.pipe_input(None, {"n": 5}, timestamp=8)  # null key: only a left join keeps it (Kafka 3.7+)
        stream.pipe_input("bob", None, timestamp=9)  # null value: dropped by both
    expected = [("ann", ({"n": 1}, "Ann Lee")), ("bob", ({"n": 3}, "Bob Ray"))]
    if left:
        expected = [
            ("ann", ({"n": 1}, "Ann Lee")),
            ("bob", ({"n": 2}, None)),
            ("bob", ({"n": 3}, "Bob Ray")),
            ("ann", ({"n": 4}, None)),
            (None, ({"n": 5}, None)),
        ]
    assert seen == expected


def test_a_joiner_gives_the_values_and_its_annotation_their_serde_for_a_group_by() -> None:
    app = App("shop")
    customers = app.table("customers", "str", "str")
    orders = app.topic("orders", key_serde="str", value_type=Order)

    def label(order: Order, name: str | None) -> str:
        return f"{name or '?'}:{order.amount}"

    seen = _agent(app, orders, lambda s: s.left_join(customers, label).group_by(lambda v: v[0], name="by-initial"))
    assert "KSTREAM-LEFTJOIN-" in str(app.topology().describe())
    with TopologyTestDriver(app) as driver:
        driver.create_input_topic("customers", "str", "str").pipe_input("c1", "Zed", timestamp=1)
        stream = driver.create_input_topic("orders", "str", "json")
        stream.pipe_input("c1", {"customer": "c1", "amount": 5}, timestamp=2)
        stream.pipe_input("c2", {"customer": "c2", "amount": 6}, timestamp=3)
        repartition = driver.create_output_topic("shop-by-initial-repartition", "str", "str")
        assert repartition.read_key_values_to_list() == [("Z", "Zed:5"), ("?", "?:6")]  # str serde: the annotation
    assert seen == ["Zed:5", "?:6"]


@pytest.mark.parametrize("left", [False, True])
def test_a_faust_global_table_is_joined_by_a_field_of_the_value(left: bool) -> None:
    app = App("shop")
    names = app.GlobalTable("names", value_type=str)
    orders = app.topic("orders", key_serde="str", value_type=Order)

    def join(s: Any) -> Any:
        return s.left_join(names, key=Order.customer) if left else s.join(names, key=Order.customer)

    seen = _agent(app, orders, lambda s: join(s).map_values(lambda pair: (pair[0].amount, pair[1])), items=True)
    with TopologyTestDriver(app) as driver:
        driver.create_input_topic("shop-names-changelog", "str", "str").pipe_input("c1", "Ann", timestamp=1)
        stream = driver.create_input_topic("orders", "str", "json")
        stream.pipe_input("o1", {"customer": "c1", "amount": 5}, timestamp=2)  # any key: no co-partitioning
        stream.pipe_input("o2", {"customer": "c9", "amount": 6}, timestamp=3)
        stream.pipe_input(None, {"customer": "c1", "amount": 7}, timestamp=4)
    expected = [("o1", (5, "Ann")), (None, (7, "Ann"))]
    if left:
        expected = [("o1", (5, "Ann")), ("o2", (6, None)), (None, (7, "Ann"))]
    assert seen == expected


def test_a_dsl_global_table_is_joined_by_the_records_key_or_a_function() -> None:
    app = App("shop")
    rates = app.builder.global_table("rates", "str", "int64", store_name="rates")
    seen = _agent(app, app.topic("prices", key_serde="str", value_serde="json"), lambda s: s.join(rates))
    other = _agent(
        app,
        app.topic("quotes", key_serde="str", value_serde="json"),
        lambda s: s.left_join(rates, key=lambda v: v["cur"]),
    )
    with TopologyTestDriver(app) as driver:
        driver.create_input_topic("rates", "str", "int64").pipe_input("EUR", 2, timestamp=1)
        driver.create_input_topic("prices", "str", "json").pipe_input("EUR", 10, timestamp=2)
        quotes = driver.create_input_topic("quotes", "str", "json")
        quotes.pipe_input("q1", {"cur": "EUR"}, timestamp=3)
        quotes.pipe_input("q2", {"cur": None}, timestamp=4)  # a key mapped to None: joined with None (left)
    assert seen == [(10, 2)]
    assert other == [({"cur": "EUR"}, 2), ({"cur": None}, None)]


def _stream_join(how: str, **options: Any) -> tuple[App, list[Any]]:
    app = App("pay")
    payments = app.topic("payments", key_serde="str", value_serde="int64")
    orders = app.topic("orders", key_serde="str", value_serde="str")
    return app, _agent(app, orders, lambda s: getattr(s, how)(payments, **options), items=True)


def test_stream_stream_join_within_seconds_includes_both_edges() -> None:
    app, seen = _stream_join("join", within=5)
    with TopologyTestDriver(app) as driver:
        orders = driver.create_input_topic("orders", "str", "str")
        payments = driver.create_input_topic("payments", "str", "int64")
        orders.pipe_input("o1", "book", timestamp=10_000)
        payments.pipe_input("o1", 12, timestamp=15_000)  # 5 s after: joins
        payments.pipe_input("o1", 13, timestamp=5_000)  # 5 s before: joins (out of order)
        payments.pipe_input("o1", 14, timestamp=15_001)  # 5.001 s: does not
        orders.pipe_input("o1", "pen", timestamp=20_001)  # joins 14 and 12? 12 is 5.001 s away: only 14
        payments.pipe_input("o2", 1, timestamp=20_001)  # another key
        orders.pipe_input(None, "lost", timestamp=20_002)  # null key: dropped
    assert seen == [("o1", ("book", 12)), ("o1", ("book", 13)), ("o1", ("pen", 14))]


def test_left_join_emits_the_unmatched_once_the_window_and_grace_have_passed() -> None:
    app, seen = _stream_join("left_join", within=timedelta(seconds=5), grace=timedelta(seconds=2))
    with TopologyTestDriver(app) as driver:
        orders = driver.create_input_topic("orders", "str", "str")
        payments = driver.create_input_topic("payments", "str", "int64")
        orders.pipe_input("o1", "book", timestamp=10_000)  # never paid
        orders.pipe_input("o2", "pen", timestamp=10_000)
        payments.pipe_input("o9", 1, timestamp=16_000)  # stream time 16 s: o1's window + grace end at 17 s
        assert seen == []
        payments.pipe_input("o2", 7, timestamp=14_000)  # late but within the window: joins
        assert seen == [("o2", ("pen", 7))]
        payments.pipe_input("o9", 1, timestamp=17_001)  # past 17 s: o1 comes out with None
        orders.pipe_input(None, "cash", timestamp=17_002)  # a null key: at once, with None
    assert seen == [("o2", ("pen", 7)), ("o1", ("book", None)), (None, ("cash", None))]


def test_outer_join_emits_both_sides_unmatched_and_takes_join_windows() -> None:
    windows = JoinWindows.of_time_difference_with_no_grace(1_000)
    app, seen = _stream_join("outer_join", within=windows, joiner=lambda o, p: f"{o}/{p}")
    with TopologyTestDriver(app) as driver:
        orders = driver.create_input_topic("orders", "str", "str")
        payments = driver.create_input_topic("payments", "str", "int64")
        orders.pipe_input("o1", "book", timestamp=1_000)
        payments.pipe_input("o2", 5, timestamp=1_500)
        payments.pipe_input("o1", 9, timestamp=2_000)  # 1 s after: joins
        orders.pipe_input("o3", "ink", timestamp=5_000)  # o2's window is over
    assert seen == [("o1", "book/9"), ("o2", "None/5")]


def test_a_joined_topic_shares_its_source_with_the_agent_reading_it() -> None:
    app, _ = _stream_join("join", within=1, name="settle")
    payments_seen = _agent(app, app.topic("payments", key_serde="str", value_serde="int64"), lambda s: s)
    description = str(app.topology().describe())
    assert description.count("topics: [payments]") == 1
    assert "settle-this-join" in description and "settle-this-join-store" in description
    with TopologyTestDriver(app) as driver:
        driver.create_input_topic("payments", "str", "int64").pipe_input("o1", 3, timestamp=1)
    assert payments_seen == [3]


def test_joined_topics_must_be_co_partitioned_as_in_the_dsl() -> None:
    app, _ = _stream_join("join", within=1)
    with pytest.raises(TopologyError, match=r"not co-partitioned: payments \(2 partitions\), orders \(4 partitions\)"):
        app.topology().internal_topics({"orders": 4, "payments": 2})
    table_app = App("shop")
    customers = table_app.table("customers", "str", "str")
    _agent(table_app, table_app.topic("orders", key_serde="str"), lambda s: s.join(customers))
    with pytest.raises(TopologyError, match="not co-partitioned"):
        table_app.topology().internal_topics({"orders": 3, "customers": 1})
    global_app = App("shop")
    names = global_app.GlobalTable("names")
    _agent(global_app, global_app.topic("orders", key_serde="str"), lambda s: s.join(names))
    assert global_app.topology().internal_topics({"orders": 3, "shop-names-changelog": 1}) == []


@pytest.mark.parametrize(
    ("join", "message"),
    [
        (lambda s, x: s.join(x.counts), "agent's store, not a changelog stream"),
        (lambda s, x: s.join("customers"), "cannot join 'customers'"),
        (lambda s, x: s.outer_join(x.names), "join or left_join"),
        (lambda s, x: s.join(x.names, within=5), "within= and grace= are for stream-stream joins"),
        (lambda s, x: s.join(x.customers, key=len), "group_by"),
        (lambda s, x: s.join(x.payments), "needs within="),
        (lambda s, x: s.join(x.payments, within=-1), "non-negative"),
        (lambda s, x: s.join(x.payments, within=JoinWindows.of_time_difference_with_no_grace(5), grace=1), "grace"),
        (lambda s, x: s.join(x.payments, within=1, key=len), "group_by"),
    ],
)
def test_what_cannot_be_joined_is_refused_when_the_topology_is_built(join: Any, message: str) -> None:
    app = App("shop")
    joinable = SimpleNamespace(
        counts=app.Table("counts"),
        names=app.GlobalTable("names"),
        customers=app.table("customers", "str", "str"),
        payments=app.topic("payments", key_serde="str"),
    )
    _agent(app, app.topic("orders", key_serde="str"), lambda s: join(s, joinable))
    with pytest.raises(TopologyError, match=message):
        app.topology()
