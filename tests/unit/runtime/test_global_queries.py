"""Interactive queries of a global store without Kafka: every client answers any key from its own copy, the
metadata names every client for it, and the view reads only while the client runs."""

from __future__ import annotations

import pytest

from streamlet.assignment.protocol import HostTasks
from streamlet.runtime.global_queries import GlobalReadOnlyKeyValueStore
from streamlet.runtime.queries import KeyQueryMetadata, QueryUnavailableError, StreamsMetadataState, UnknownStoreError
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.state import timestamped
from streamlet.state.store import InMemoryKeyValueStore
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder

LOCAL, REMOTE = "127.0.0.1:7001", "127.0.0.1:7002"


def _state() -> StreamsMetadataState:
    builder = StreamsBuilder()
    rates = builder.global_table("rates", "str", "int64", store_name="rates")
    orders = builder.stream("orders", "str", "str")
    orders.group_by_key().count("counts")
    orders.join(rates, lambda k, v: v, lambda order, rate: f"{order}@{rate}").to("priced", "str", "str")
    metadata = TopologyMetadata(builder.build(), "app")
    metadata.task_partitions({"orders": 2})
    state = StreamsMetadataState(metadata, LOCAL)
    state.register_thread("t1")
    sub = state.subtopology_of("counts")  # the global store's group took an id too (no tasks)
    state.assignment_applied(
        "t1", {LOCAL: HostTasks(frozenset({TaskId(sub, 0)})), REMOTE: HostTasks(frozenset({TaskId(sub, 1)}))}
    )
    return state


def test_every_client_has_the_global_store_and_answers_any_key_itself() -> None:
    state = _state()
    assert state.store_names() == ["counts", "rates"] and state.is_global("rates") and not state.is_global("counts")
    assert [(m.host, sorted(m.store_names)) for m in state.all_metadata()] == [
        (LOCAL, ["counts", "rates"]),
        (REMOTE, ["counts", "rates"]),
    ]
    assert [m.host for m in state.metadata_for_store("rates")] == [LOCAL, REMOTE]
    assert state.key_query_metadata("rates", b"EUR") == KeyQueryMetadata(LOCAL, frozenset(), -1)
    assert state.partition_for("rates", b"EUR") == -1
    assert state.key_query_metadata("counts", b"EUR").partition in (0, 1)  # a task's store still routes


def test_the_view_reads_the_whole_local_copy_while_the_client_runs() -> None:
    state = _state()
    store = InMemoryKeyValueStore("rates")
    for currency, rate in (("EUR", 2), ("GBP", 3), ("USD", 1)):
        store.put(currency.encode(), timestamped.encode(7, rate.to_bytes(8, "big", signed=True)))
    running = [True]
    view = GlobalReadOnlyKeyValueStore("rates", state, lambda: running[0], lambda: store)
    assert view.get("GBP") == 3 and view.get("JPY") is None
    assert list(view.all()) == [("EUR", 2), ("GBP", 3), ("USD", 1)]
    assert list(view.range("F", None)) == [("GBP", 3), ("USD", 1)]
    assert list(view.raw_all())[0] == (b"EUR", (2).to_bytes(8, "big", signed=True))
    running[0] = False
    with pytest.raises(QueryUnavailableError) as unavailable:
        view.get("EUR")
    assert unavailable.value.reason == "not_running"
    with pytest.raises(UnknownStoreError, match="not a global store"):
        GlobalReadOnlyKeyValueStore("counts", state, lambda: True, lambda: store)
