"""A null value at an agent's `group_by(Order.customer)` on the real broker: the processing handler decides,
and what it reports names the agent's group_by."""

from __future__ import annotations

import asyncio
import json
import struct
from typing import Any

import pytest

from streamlet import App, Record
from streamlet.errors import ProcessingFailure
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration


class Order(Record):
    customer: str
    amount: int = 0


ORDERS = [("ann", 5), ("bob", 2), None, ("ann", 1)]  # None: a record with a null value


async def _client(kafka: KafkaTestCluster, tmp_path: Any, **extra: Any) -> tuple[KafkaStreams, str]:
    source = await kafka.create_topic("orders", partitions=1)
    sink = await kafka.create_topic("totals", partitions=1)
    app_id = unique_name("orders-nulls")
    for suffix in (f"{source}-Order.customer-repartition", "totals-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    app = App(app_id)
    orders = app.topic(source, value_type=Order)
    out = app.topic(sink, key_type=str, value_serde="int64")
    totals = app.Table("totals", key_type=str, value_type=int, default=int)

    @app.agent(orders, tables=[totals])
    async def total_by_customer(stream: Any) -> None:
        async for order in stream.group_by(Order.customer):
            totals[order.customer] += order.amount
            await out.send(key=order.customer, value=totals[order.customer])

    records = [(b"k", None if o is None else json.dumps({"customer": o[0], "amount": o[1]}).encode()) for o in ORDERS]
    await kafka.produce(source, records)
    client = app.streams(
        bootstrap_servers=kafka.bootstrap_servers, state_dir=str(tmp_path), commit_interval_ms=200, **extra
    )
    return client, sink


async def test_log_and_continue_skips_the_null_value(kafka: KafkaTestCluster, tmp_path: Any) -> None:
    client, sink = await _client(kafka, tmp_path, processing_exception_handler="log_and_continue")
    await client.start()
    try:
        records = await kafka.drain(sink, 1, expected=3, timeout=60)
        latest = {r.key.decode(): struct.unpack(">q", r.value)[0] for r in records}
        assert latest == {"ann": 6, "bob": 2}
        assert sum(t.resources.handlers.processing.skipped for t in client.threads) == 1
    finally:
        await client.close()


async def test_fail_stops_naming_the_agents_group_by(kafka: KafkaTestCluster, tmp_path: Any) -> None:
    client, _ = await _client(kafka, tmp_path)
    await client.start()
    try:
        with pytest.raises(ProcessingFailure, match=r"total_by_customer: group_by '.*Order\.customer'.*value is null"):
            await asyncio.wait_for(client.wait(), timeout=60)
    finally:
        await client.close()
