"""The worker's web server without Kafka: two servers on loopback, each over fake local tasks of WordCount's store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
import pytest
from aiokafka.structs import TopicPartition

from examples.wordcount.dsl import build_topology
from streamlet.app import App
from streamlet.assignment.protocol import HostTasks
from streamlet.faust.tables import Table
from streamlet.runtime.metrics_publisher import ClientMetrics
from streamlet.runtime.queries import ReadOnlyKeyValueStore, StreamsMetadataState, partition_for_key
from streamlet.runtime.restore_listener import RestoreProgressTracker
from streamlet.runtime.task_state import TaskState
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.task_id import TaskId
from streamlet.web import FORWARDED_HEADER, SERVED_BY_HEADER, Page, WebServer
from tests.support.local_tasks import STORE, SUB, Standby, StandbyStateManager, Tasks, count_store, running, word_on
from tests.unit.runtime._harness import IN0, T0, Harness, new_kafka


class _Client:
    """A KafkaStreams as the web server sees it: metadata state plus local tasks (partitions `owned`)."""

    def __init__(self, owned: list[int], counts: dict[str, int]) -> None:
        metadata = TopologyMetadata(build_topology(), "app")
        metadata.task_partitions({"streams-plaintext-input": 6, "app-counts-store-repartition": 6})
        self.metadata_state = StreamsMetadataState(metadata, "")
        self.metadata_state.register_thread("t1")
        self.running = True
        self.manager = Tasks()
        for p in owned:
            mine = {word: count for word, count in counts.items() if partition_for_key(word.encode(), 6) == p}
            self.manager.active[TaskId(SUB, p)] = running(count_store(mine))

        self.end_offsets: dict[TopicPartition, int] = {}
        self.refreshed = 0
        self.metrics: ClientMetrics | None = None

    def store(self, name: str, *, max_standby_lag: int | None = None) -> ReadOnlyKeyValueStore:
        return ReadOnlyKeyValueStore(
            name,
            self.metadata_state,
            lambda: self.running,
            lambda: [self.manager],
            max_standby_lag=max_standby_lag,
            standby_end_offset=self.end_offsets.get,
        )

    async def refresh_standby_lags(self) -> dict[TopicPartition, int]:
        self.refreshed += 1
        return {}


COUNTS = {word_on(p): 10 + p for p in range(6)}
table = Table(STORE, key_serde="str", value_serde="int64")


async def _count_page(web, request, word):
    return web.json({"word": word, "count": table[word]})


async def _write_page(web, request, word):
    table[word] = 1
    return web.json({})


async def _local_page(web, request):
    return dict(table.items())  # a JSON-able value is answered as JSON


PAGES = [Page("/count/{word}", _count_page), Page("/write/{word}", _write_page), Page("/local", _local_page)]


@dataclass
class _Cluster:
    a: _Client
    b: _Client
    server_a: WebServer
    server_b: WebServer
    http: aiohttp.ClientSession

    def url(self, server: WebServer, path: str) -> str:
        return f"http://127.0.0.1:{server.port}{path}"

    def assign(self) -> None:
        by_host = {
            self.a.metadata_state.local_host: HostTasks(frozenset(TaskId(SUB, p) for p in (0, 1, 2))),
            self.b.metadata_state.local_host: HostTasks(frozenset(TaskId(SUB, p) for p in (3, 4, 5))),
        }
        self.a.metadata_state.assignment_applied("t1", by_host)
        self.b.metadata_state.assignment_applied("t1", by_host)

    async def get(self, server: WebServer, path: str, **kwargs: Any) -> tuple[int, dict[str, Any], Any]:
        async with self.http.get(self.url(server, path), **kwargs) as response:
            return response.status, dict(response.headers), await response.json()


@pytest.fixture
async def cluster() -> AsyncIterator[_Cluster]:
    a, b = _Client([0, 1, 2], COUNTS), _Client([3, 4, 5], COUNTS)
    server_a, server_b = WebServer(a, pages=PAGES), WebServer(b, pages=PAGES)
    await server_a.start()
    await server_b.start()
    a.metadata_state.local_host = f"127.0.0.1:{server_a.port}"
    b.metadata_state.local_host = f"127.0.0.1:{server_b.port}"
    http = aiohttp.ClientSession()
    c = _Cluster(a, b, server_a, server_b, http)
    c.assign()
    try:
        yield c
    finally:
        await http.close()
        await server_a.stop()
        await server_b.stop()


async def test_every_key_answers_through_either_server(cluster: _Cluster) -> None:
    for server in (cluster.server_a, cluster.server_b):
        for word, count in COUNTS.items():
            status, headers, body = await cluster.get(server, f"/stores/{STORE}/{word}")
            assert status == 200, body
            assert body["value"] == count and body["key"] == word
            owner = cluster.a if partition_for_key(word.encode(), 6) < 3 else cluster.b
            assert body["host"] == headers[SERVED_BY_HEADER] == owner.metadata_state.local_host


async def test_missing_key_and_unknown_store_are_404(cluster: _Cluster) -> None:
    missing = next(w for w in (f"m{i}" for i in range(1000)) if partition_for_key(w.encode(), 6) == 4)
    status, _, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{missing}")  # forwarded to b
    assert (status, body["error"], body["partition"]) == (404, "not_found", 4)
    status, _, body = await cluster.get(cluster.server_a, "/stores/nope/x")
    assert (status, body["error"]) == (404, "unknown_store")


async def test_rebalancing_is_503_with_a_reason_even_through_a_forward(cluster: _Cluster) -> None:
    cluster.b.metadata_state.rebalance_started("t1")
    status, headers, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{word_on(4)}")
    assert (status, body["error"], body["reason"]) == (503, "unavailable", "rebalancing")
    assert headers["Retry-After"] == "1"
    assert headers[SERVED_BY_HEADER] == cluster.b.metadata_state.local_host
    status, _, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{word_on(0)}")
    assert status == 200  # a's own partitions still answer: a is not rebalancing


async def test_restoring_task_and_stopped_client_are_503(cluster: _Cluster) -> None:
    cluster.a.manager.active[TaskId(SUB, 1)].state = TaskState.RESTORING
    status, _, body = await cluster.get(cluster.server_b, f"/stores/{STORE}/{word_on(1)}")
    assert (status, body["reason"]) == (503, "restoring")
    cluster.a.running = False
    status, _, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{word_on(0)}")
    assert (status, body["reason"]) == (503, "not_running")


async def test_a_request_is_forwarded_at_most_once(cluster: _Cluster) -> None:
    # b's metadata is newer than a's: each thinks the other owns partition 0
    host_a, host_b = cluster.a.metadata_state.local_host, cluster.b.metadata_state.local_host
    cluster.a.manager.active.pop(TaskId(SUB, 0))
    cluster.a.metadata_state.assignment_applied("t1", {host_b: HostTasks(frozenset({TaskId(SUB, 0)}))})
    cluster.b.metadata_state.assignment_applied("t1", {host_a: HostTasks(frozenset({TaskId(SUB, 0)}))})
    status, _, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{word_on(0)}")
    assert (status, body["reason"]) == (503, "not_owner")
    status, _, body = await cluster.get(
        cluster.server_b, f"/stores/{STORE}/{word_on(0)}", headers={FORWARDED_HEADER: "elsewhere"}
    )
    assert (status, body["reason"]) == (503, "not_owner")


async def test_an_unreachable_owner_is_503(cluster: _Cluster) -> None:
    dead = "127.0.0.1:9"  # discard port: nothing listens
    cluster.a.metadata_state.assignment_applied("t1", {dead: HostTasks(frozenset({TaskId(SUB, 4)}))})
    status, _, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{word_on(4)}")
    assert (status, body["reason"]) == (503, "owner_unreachable")


async def test_metadata_endpoints(cluster: _Cluster) -> None:
    host_a, host_b = cluster.a.metadata_state.local_host, cluster.b.metadata_state.local_host
    status, _, body = await cluster.get(cluster.server_a, "/metadata")
    assert status == 200
    assert {m["host"]: m["active_tasks"] for m in body} == {
        host_a: ["1_0", "1_1", "1_2"],
        host_b: ["1_3", "1_4", "1_5"],
    }
    status, _, body = await cluster.get(cluster.server_b, f"/metadata/{STORE}")
    assert [m["stores"] for m in body] == [[STORE], [STORE]]
    status, _, body = await cluster.get(cluster.server_b, f"/metadata/{STORE}/{word_on(2)}")
    assert body == {"active_host": host_a, "standby_hosts": [], "partition": 2}


async def test_pages_read_tables_and_forward_to_the_keys_owner(cluster: _Cluster) -> None:
    for word, count in COUNTS.items():
        for server in (cluster.server_a, cluster.server_b):
            status, _, body = await cluster.get(server, f"/count/{word}")
            assert (status, body) == (200, {"word": word, "count": count})
    cluster.a.metadata_state.rebalance_started("t1")
    status, _, body = await cluster.get(cluster.server_b, f"/count/{word_on(0)}")
    assert (status, body["reason"]) == (503, "rebalancing")


async def test_table_items_in_a_page_are_this_workers_partitions(cluster: _Cluster) -> None:
    status, _, body = await cluster.get(cluster.server_a, "/local")
    assert (status, body) == (200, {w: c for w, c in COUNTS.items() if partition_for_key(w.encode(), 6) < 3})
    cluster.a.manager.active[TaskId(SUB, 2)].state = TaskState.RESTORING  # a partial listing is not an answer
    status, _, body = await cluster.get(cluster.server_a, "/local")
    assert (status, body["reason"]) == (503, "restoring")


async def test_tables_are_read_only_in_pages(cluster: _Cluster) -> None:
    status, _, body = await cluster.get(cluster.server_a, f"/write/{word_on(0)}")
    assert status == 400 and "read-only" in body["message"]


async def test_a_standby_answers_only_with_max_standby_lag(cluster: _Cluster) -> None:
    word = word_on(4)  # active on b; a gets a standby of it holding an older count
    store = count_store({word: 3})
    tp = TopicPartition("app-counts-store-changelog", 4)
    cluster.a.manager.standby[TaskId(SUB, 4)] = Standby(StandbyStateManager(store, 4, position=50))
    cluster.a.end_offsets[tp] = 55
    status, headers, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{word}")
    assert (status, body["value"], headers[SERVED_BY_HEADER]) == (
        200,
        COUNTS[word],
        cluster.b.metadata_state.local_host,
    )
    status, headers, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{word}?max_standby_lag=5")
    assert (status, body["value"], headers[SERVED_BY_HEADER]) == (200, 3, cluster.a.metadata_state.local_host)
    assert cluster.a.refreshed == 1
    # too far behind: the active task's host answers instead
    status, headers, body = await cluster.get(cluster.server_a, f"/stores/{STORE}/{word}?max_standby_lag=4")
    assert (status, body["value"], headers[SERVED_BY_HEADER]) == (
        200,
        COUNTS[word],
        cluster.b.metadata_state.local_host,
    )


def test_app_page_registers_a_faust_style_handler() -> None:
    app = App("pages-test")

    @app.page("/hello/{name}", method="post")
    async def hello(web, request, name):
        return web.text(f"hello {name}")

    assert app._pages == [Page("/hello/{name}", hello, "POST")]
    assert hello.__name__ == "hello"  # the decorator returns the function itself


async def test_metrics_and_status_serve_the_clients_sample(cluster: _Cluster, tmp_path: Path) -> None:
    status, _, body = await cluster.get(cluster.server_a, "/status")
    assert status == 503 and body["reason"] == "not_running"  # the client has not started
    kafka = new_kafka()
    harness = Harness(kafka, tmp_path)
    try:
        harness.assign(T0)
        await harness.task_manager.restore(timeout_ms=0)
        for _ in range(3):
            kafka.append(IN0, b"w", b"line")
        await harness.poll_and_process()
        thread = SimpleNamespace(
            name="app-t1", task_manager=harness.task_manager, consumer=harness.consumer, resources=harness.resources
        )
        cluster.a.metrics = ClientMetrics(
            "app",
            "pid-a",
            "127.0.0.1:1",
            5000,
            lambda: [thread],
            RestoreProgressTracker(),
            cluster.a.refresh_standby_lags,
        )
        async with cluster.http.get(cluster.url(cluster.server_a, "/metrics")) as response:
            assert response.status == 200
            assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
            text = await response.text()
        client = 'application_id="app",process_id="pid-a"'
        assert f'streamlet_task_records_processed_total{{{client},task="0_0"}} 3.0' in text.splitlines()
        assert 'streamlet_consumer_lag{application_id="app",partition="0",process_id="pid-a",topic="in"} 0.0' in text
        status, _, body = await cluster.get(cluster.server_a, "/status")
        assert status == 200 and body["tasks"]["0_0"]["records_processed"] == 3
        assert body["tasks"]["0_0"]["state"] == "RUNNING" and body["rebalances"] == 1
    finally:
        harness.close()
