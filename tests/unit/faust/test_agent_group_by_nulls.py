"""A null value reaching an agent's `group_by(Model.field)`: a processing error naming the agent's group_by."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiokafka.structs import ConsumerRecord

from streamlet import App, Record
from streamlet.errors import ProcessingFailure
from streamlet.faust.agent_stream import GroupByError
from streamlet.runtime.handlers import ExceptionHandler
from streamlet.runtime.task_context import RecordProcessingError
from streamlet.task_id import TaskId
from streamlet.testing import TopologyTestDriver


class Order(Record):
    customer: str
    amount: int = 0


def _orders_app() -> tuple[App, Any]:
    app = App("orders-app")
    orders = app.topic("orders", value_type=Order)
    totals = app.Table("totals", key_type=str, value_type=int, default=int)

    @app.agent(orders, tables=[totals])
    async def total_by_customer(stream: Any) -> None:
        async for order in stream.group_by(Order.customer):
            totals[order.customer] += order.amount

    return app, totals


def _null_value_error() -> RecordProcessingError:
    app, _ = _orders_app()
    with TopologyTestDriver(app) as driver:
        orders = driver.create_input_topic("orders", "str", "json")
        orders.pipe_input("o1", {"customer": "ann", "amount": 5}, timestamp=1)
        with pytest.raises(RecordProcessingError) as caught:
            orders.pipe_input("o2", None, timestamp=2)
        assert driver.get_key_value_store("totals").get("ann") == 5
    return caught.value


def test_a_null_value_names_the_agent_and_its_group_by_not_a_generated_node() -> None:
    error = _null_value_error()
    assert isinstance(error.cause, GroupByError)
    message = str(error.cause)
    assert "total_by_customer" in message
    assert "group_by 'orders-Order.customer' (Order.customer)" in message
    assert "the record's value is null" in message
    assert "stream.filter(lambda v: v is not None)" in message
    assert "NoneType" not in message


def _record() -> ConsumerRecord[Any, Any]:
    return ConsumerRecord("orders", 0, 7, 2, 0, b"o2", None, None, 2, 0, ())


def test_under_fail_the_worker_stops_with_the_group_by_in_the_message() -> None:
    error = _null_value_error()
    handler = ExceptionHandler("processing", "fail", collector=None)  # type: ignore[arg-type]
    with pytest.raises(ProcessingFailure, match=r"total_by_customer: group_by 'orders-Order.customer'.*offset 7"):
        handler.handle(TaskId(0, 0), _record(), error.cause, error.node)


def test_under_log_and_continue_the_record_is_skipped_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    error = _null_value_error()
    handler = ExceptionHandler("processing", "log_and_continue", collector=None)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING, logger="streamlet.task"):
        handler.handle(TaskId(0, 0), _record(), error.cause, error.node)
    assert handler.skipped == 1
    assert "value is null" in caplog.text and "skipped" in caplog.text


def test_a_key_function_that_raises_is_named_too() -> None:
    app = App("orders-app")
    orders = app.topic("orders", value_type=Order)

    @app.agent(orders)
    async def by_initial(stream: Any) -> None:
        async for _ in stream.group_by(lambda order: order.customer[0], name="by-initial"):
            pass

    with TopologyTestDriver(app) as driver:
        topic = driver.create_input_topic("orders", "str", "json")
        with pytest.raises(RecordProcessingError) as caught:
            topic.pipe_input("o1", {"customer": "", "amount": 1}, timestamp=1)
    assert isinstance(caught.value.cause, GroupByError)
    assert "by_initial: group_by 'by-initial': its key function" in str(caught.value.cause)
    assert "IndexError" in str(caught.value.cause)
