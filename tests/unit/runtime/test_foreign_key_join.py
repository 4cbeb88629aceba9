"""The response side of a foreign-key join: a response is joined only while the left value it was computed
for is still current (Kafka's hash check), which is what makes out-of-order responses harmless; and
subscriptions carry the partition of their primary key, for the response to come back to."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from streamlet.murmur3 import hash128
from streamlet.serdes import StringSerde
from streamlet.testing import TopologyTestDriver
from streamlet.topology import StreamsBuilder
from streamlet.topology.subscription_wrappers import (
    SubscriptionResponseWrapper,
    SubscriptionResponseWrapperSerde,
    SubscriptionWrapperSerde,
)

APP = "fk"
SUBSCRIPTIONS = f"{APP}-KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"
RESPONSES = f"{APP}-KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"


@pytest.fixture
def driver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TopologyTestDriver]:
    builder = StreamsBuilder()
    orders = builder.table("orders", "str", "str")
    customers = builder.table("customers", "str", "str")
    orders.left_join(customers, lambda v: v.split(":")[0], lambda o, c: f"{o}+{c}").to_stream().to("out", "str", "str")
    config = {"application_id": APP, "state_dir": str(tmp_path_factory.mktemp("state"))}
    with TopologyTestDriver(builder, config) as test_driver:
        yield test_driver


def _respond(driver: TopologyTestDriver, key: str, left_value: str, foreign_value: str) -> None:
    response = SubscriptionResponseWrapper(hash128(left_value.encode()), foreign_value)
    value = SubscriptionResponseWrapperSerde(StringSerde()).serialize(RESPONSES, response)
    driver.pipe_raw(RESPONSES, key.encode(), value, 50)


def test_a_response_for_a_replaced_left_value_is_dropped(driver: TopologyTestDriver) -> None:
    orders = driver.create_input_topic("orders", "str", "str")
    out = driver.create_output_topic("out", "str", "str")
    orders.pipe_input("o1", "c1:first", 10)
    orders.pipe_input("o1", "c2:second", 11)
    assert out.read_key_values_to_list() == [("o1", "c1:first+None"), ("o1", "c2:second+None")]
    dropped = driver.dropped_records()
    _respond(driver, "o1", "c1:first", "late answer for the old value")  # arrives after the newer one
    assert out.is_empty()
    assert driver.dropped_records() == dropped + 1
    _respond(driver, "o1", "c2:second", "Carol")  # for the current value: joined
    assert out.read_key_values_to_list() == [("o1", "c2:second+Carol")]


def test_a_subscription_names_its_primary_key_and_partition_and_hashes_the_left_value(
    driver: TopologyTestDriver,
) -> None:
    driver.create_input_topic("orders", "str", "str").pipe_input("o1", "c1:first", 10)
    key, value, timestamp = driver.read_raw(SUBSCRIPTIONS)
    subscription = SubscriptionWrapperSerde(StringSerde()).deserialize(SUBSCRIPTIONS, value)
    assert key == b"c1" and timestamp == 10
    assert subscription is not None
    assert (subscription.primary_key, subscription.primary_partition) == ("o1", 0)
    assert subscription.hash == hash128(b"c1:first")
