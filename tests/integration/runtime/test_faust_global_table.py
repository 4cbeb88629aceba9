"""Faust's `app.GlobalTable` on the real broker, two workers of one app: rates written by an agent on one
worker reach the whole table on both, and orders over 3 partitions, priced on whichever worker owns them, see
every rate. The expected output is computed here from the records produced. Both workers also answer
interactive queries of the global store (the Python API, `/stores/...` and a page) from their own copy."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from streamlet import App
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.queries import KeyQueryMetadata
from streamlet.state import timestamped
from streamlet.web import Page, WebServer
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 3


def _app(app_id: str, orders: str, rate_updates: str, out: str) -> App:
    app = App(app_id)
    rates = app.GlobalTable("rates", value_type=int, partitions=2)
    orders_topic = app.topic(orders, key_serde="str", value_serde="str")  # value: currency
    updates_topic = app.topic(rate_updates, key_serde="str", value_serde="int64")
    out_topic = app.topic(out, key_serde="str", value_serde="str")

    @app.agent(updates_topic, tables=[rates])
    async def set_rates(stream: Any) -> None:
        async for currency, rate in stream.items():
            rates[currency] = rate

    @app.agent(orders_topic)
    async def price(stream: Any) -> None:
        async for order, currency in stream.items():
            await out_topic.send(key=order, value=f"{currency}:{rates.get(currency)}")

    return app


def _rates_of(client: KafkaStreams) -> dict[str, int]:
    assert client.global_thread is not None
    store = client.global_thread.stores["rates"]
    return {k.decode(): int.from_bytes(timestamped.value_of(v), "big", signed=True) for k, v in store.all()}


async def test_two_workers_share_a_global_table_written_by_an_agent(kafka: KafkaTestCluster, tmp_path: Any) -> None:
    orders = await kafka.create_topic("orders", partitions=PARTITIONS)
    rate_updates = await kafka.create_topic("rate-updates", partitions=PARTITIONS)
    out = await kafka.create_topic("priced", partitions=PARTITIONS)
    app_id = unique_name("faust-global")
    kafka.track(f"{app_id}-rates-changelog")
    app = _app(app_id, orders, rate_updates, out)
    clients = [
        app.streams(
            bootstrap_servers=kafka.bootstrap_servers, state_dir=str(tmp_path / f"w{i}"), commit_interval_ms=200
        )
        for i in range(2)
    ]
    try:
        for client in clients:
            await client.start()
        await wait_until(lambda: all(c.threads[0].task_manager.active for c in clients), "both workers to own tasks")
        rates = {f"cur{i}": 100 + i for i in range(9)}
        await kafka.produce(rate_updates, [(k.encode(), v.to_bytes(8, "big", signed=True)) for k, v in rates.items()])
        await wait_until(lambda: all(_rates_of(c) == rates for c in clients), "both workers to hold every rate")

        orders_in = [(f"o{i:03d}", f"cur{i % 10}") for i in range(60)]  # cur9 has no rate
        await kafka.produce(orders, [(k.encode(), v.encode()) for k, v in orders_in])
        records = await kafka.drain(out, PARTITIONS, expected=len(orders_in), timeout=60)
        got = sorted((r.key.decode(), r.value.decode()) for r in records)
        assert got == sorted((order, f"{cur}:{rates.get(cur)}") for order, cur in orders_in)
    finally:
        for client in clients:
            await client.close()


async def test_every_worker_answers_queries_of_the_global_store_from_its_own_copy(
    kafka: KafkaTestCluster, tmp_path: Any
) -> None:
    orders = await kafka.create_topic("orders", partitions=PARTITIONS)
    rate_updates = await kafka.create_topic("rate-updates", partitions=PARTITIONS)
    out = await kafka.create_topic("priced", partitions=PARTITIONS)
    app_id = unique_name("faust-global-iq")
    kafka.track(f"{app_id}-rates-changelog")
    app = _app(app_id, orders, rate_updates, out)
    rates_table = app._tables["rates"]  # the GlobalTable, read by a page as by an agent

    async def rate(web: Any, request: Any, currency: str) -> Any:
        return web.json({"rate": rates_table.get(currency), "known": len(rates_table)})

    hosts = ("host-a:7001", "host-b:7002")
    clients = [
        app.streams(
            bootstrap_servers=kafka.bootstrap_servers,
            state_dir=str(tmp_path / f"w{i}"),
            commit_interval_ms=200,
            application_server=host,
        )
        for i, host in enumerate(hosts)
    ]
    servers = [WebServer(client, pages=[Page("/rate/{currency}", rate, "GET")]) for client in clients]
    try:
        for client, server in zip(clients, servers, strict=True):
            await client.start()
            await server.start()
        await wait_until(lambda: all(c.threads[0].task_manager.active for c in clients), "both workers to own tasks")
        rates = {f"cur{i}": 100 + i for i in range(9)}
        await kafka.produce(rate_updates, [(k.encode(), v.to_bytes(8, "big", signed=True)) for k, v in rates.items()])
        await wait_until(lambda: all(_rates_of(c) == rates for c in clients), "both workers to hold every rate")

        async with aiohttp.ClientSession() as session:
            for host, client, server in zip(hosts, clients, servers, strict=True):
                view = client.store("rates")  # the whole table, whichever tasks this worker runs
                assert dict(view.all()) == rates
                assert view.get("cur4") == 104 and view.get("cur9") is None
                assert client.query_metadata_for_key("rates", "cur4") == KeyQueryMetadata(host, frozenset(), -1)
                assert {m.host for m in client.metadata_for_store("rates")} == set(hosts)
                base = f"http://127.0.0.1:{server.port}"
                async with session.get(f"{base}/stores/rates/cur4") as response:
                    assert response.status == 200
                    body = await response.json()
                assert body == {"store": "rates", "key": "cur4", "partition": -1, "host": host, "value": 104}
                async with session.get(f"{base}/stores/rates/cur9") as response:
                    assert response.status == 404
                async with session.get(f"{base}/rate/cur7") as response:
                    assert await response.json() == {"rate": 107, "known": len(rates)}
    finally:
        for server in servers:
            await server.stop()
        for client in clients:
            await client.close()
