"""A Faust-style stream-table join on the real broker: an agent enriches orders (keyed by customer) with the
customers table (`app.table(topic)`) through `stream.left_join(customers)`, over two co-partitioned topics of
two partitions each. The expected output is computed here from the records produced."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet import App
from streamlet.runtime.queries import QueryUnavailableError
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 2


def _app(app_id: str, orders: str, customers: str, out: str) -> App:
    app = App(app_id)
    customers_table = app.table(customers, "str", "str", store_name="customers")
    orders_topic = app.topic(orders, key_serde="str", value_serde="str")
    out_topic = app.topic(out, key_serde="str", value_serde="str")

    @app.agent(orders_topic)
    async def enrich(stream: Any) -> None:
        async for customer_id, (order, name) in stream.left_join(customers_table).items():
            await out_topic.send(key=order, value=f"{customer_id}:{name}")

    return app


async def test_an_agent_enriches_orders_with_a_table(kafka: KafkaTestCluster, tmp_path: Any) -> None:
    orders = await kafka.create_topic("orders", partitions=PARTITIONS)
    customers = await kafka.create_topic("customers", partitions=PARTITIONS)
    out = await kafka.create_topic("enriched", partitions=PARTITIONS)
    app = _app(unique_name("faust-join"), orders, customers, out)
    client = app.streams(bootstrap_servers=kafka.bootstrap_servers, state_dir=str(tmp_path), commit_interval_ms=200)
    names = {f"c{i}": f"name{i}" for i in range(8)}
    try:
        await client.start()
        await kafka.produce(customers, [(k.encode(), v.encode()) for k, v in names.items()])
        store = client.store("customers")

        def loaded() -> bool:
            try:
                return store.approximate_num_entries() == len(names)
            except QueryUnavailableError:
                return False

        await wait_until(loaded, "the customers table to be loaded")
        orders_in = [(f"c{i % 10}", f"o{i:03d}") for i in range(40)]  # c8 and c9 are not customers
        await kafka.produce(orders, [(k.encode(), v.encode()) for k, v in orders_in])
        records = await kafka.drain(out, PARTITIONS, expected=len(orders_in), timeout=60)
        got = sorted((r.key.decode(), r.value.decode()) for r in records)
        assert got == sorted((order, f"{customer}:{names.get(customer)}") for customer, order in orders_in)
    finally:
        await client.close()
