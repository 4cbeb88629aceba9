"""KStream-KStream joins in the topology: Kafka's names and stores, changelog configs, repartitions and
co-partitioning (describe() itself is checked against Kafka Streams in tests/oracle/topology)."""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.join_windows import JoinWindows, StreamJoined

WINDOWS = JoinWindows.of_time_difference_and_grace(100, 50)


def _join(kind: str, joined: StreamJoined | None = None, *, rekey: bool = False) -> Topology:
    builder = StreamsBuilder()
    orders = builder.stream("orders", "str", "str")
    payments = builder.stream("payments", "str", "str")
    if rekey:
        payments = payments.select_key(lambda k, v: v)
    join = {"join": orders.join, "left": orders.left_join, "outer": orders.outer_join}[kind]
    join(payments, lambda o, p: f"{o}|{p}", WINDOWS, stream_joined=joined).to("out")
    return builder.build()


def _processors(topology: Topology) -> dict[str, tuple[str, ...]]:
    return {spec.name: getattr(spec, "stores", ()) for spec in topology.nodes}


def test_an_outer_join_is_five_processors_and_three_stores_named_as_in_kafka() -> None:
    processors = _processors(_join("outer"))
    assert processors["KSTREAM-WINDOWED-0000000002"] == ("KSTREAM-OUTERTHIS-0000000004-store",)
    assert processors["KSTREAM-WINDOWED-0000000003"] == ("KSTREAM-OUTEROTHER-0000000005-store",)
    shared = "KSTREAM-OUTERSHARED-0000000004-store"
    assert processors["KSTREAM-OUTERTHIS-0000000004"] == ("KSTREAM-OUTEROTHER-0000000005-store", shared)
    assert processors["KSTREAM-OUTEROTHER-0000000005"] == ("KSTREAM-OUTERTHIS-0000000004-store", shared)
    assert processors["KSTREAM-MERGE-0000000006"] == ()


def test_a_named_left_join_names_its_processors_and_a_store_name_its_stores() -> None:
    processors = _processors(_join("left", StreamJoined.as_("paid").with_name("pay")))
    assert processors["pay-this-windowed"] == ("paid-this-join-store",)
    assert processors["pay-this-join"] == ("paid-outer-other-join-store", "paid-left-shared-join-store")
    assert processors["pay-outer-other-join"] == ("paid-this-join-store", "paid-left-shared-join-store")
    assert "pay-merge" in processors


def test_window_changelogs_are_deleted_by_time_and_the_shared_store_compacted() -> None:
    topics = {t.name: t for t in _join("left", StreamJoined.as_("paid")).internal_topics({"orders": 2, "payments": 2})}
    window = topics["paid-this-join-store-changelog"]
    assert window.partitions == 2
    assert window.config["cleanup.policy"] == "delete"  # every record is kept: nothing to compact
    assert window.config["retention.ms"] == str(250 + 86_400_000)  # size + grace + a day
    assert topics["paid-left-shared-join-store-changelog"].config["cleanup.policy"] == "compact"


def test_joined_topics_must_be_co_partitioned_unless_a_side_is_repartitioned() -> None:
    with pytest.raises(TopologyError, match=r"payments \(3 partitions\).*orders \(2 partitions\)"):
        _join("join").internal_topics({"orders": 2, "payments": 3})
    # a re-keyed side is written through a repartition topic sized like the other side
    topics = {t.name: t for t in _join("join", rekey=True).internal_topics({"orders": 2, "payments": 3})}
    assert topics["KSTREAM-KEY-SELECT-0000000002-repartition"].partitions == 2
    named = _join("join", StreamJoined().with_name("pay"), rekey=True)
    assert named.repartition_topics() == ["pay-right-repartition"]


def test_join_options_are_checked() -> None:
    builder = StreamsBuilder()
    orders, payments = builder.stream("orders"), builder.stream("payments")
    with pytest.raises(TopologyError, match="takes JoinWindows"):
        orders.left_join(payments, lambda o, p: o)
    with pytest.raises(TopologyError, match="stream_joined=StreamJoined"):
        orders.join(payments, lambda o, p: o, WINDOWS, name="x")
    with pytest.raises(TopologyError, match="are for stream-stream joins"):
        orders.join(builder.table("t"), lambda o, p: o, WINDOWS)
    with pytest.raises(TopologyError, match="different StreamsBuilders"):
        orders.outer_join(StreamsBuilder().stream("x"), lambda o, p: o, WINDOWS)
    with pytest.raises(TopologyError, match="must be callable"):
        orders.outer_join(payments, "joiner", WINDOWS)  # type: ignore[arg-type]
