"""app.GlobalTable on the TopologyTestDriver: any agent reads the whole table, writes go to its changelog topic
and to the local copy, the topic feeds the table, and what a GlobalTable cannot be is refused."""

from __future__ import annotations

import pytest

from streamlet import App
from streamlet.errors import TopologyError
from streamlet.testing import TopologyTestDriver


def _app() -> tuple[App, list[tuple[str, object, int]]]:
    app = App("shop")
    prices = app.GlobalTable("prices", value_type=int, default=lambda: -1)
    orders = app.topic("orders", key_serde="str", value_serde="str")
    updates = app.topic("price-updates", key_serde="str", value_serde="int64")
    seen: list[tuple[str, object, int]] = []

    @app.agent(orders)  # reads the table without listing it
    async def price_orders(stream):  # type: ignore[no-untyped-def]
        async for item in stream:
            seen.append((item, prices[item], len(prices)))

    @app.agent(updates, tables=[prices])
    async def set_prices(stream):  # type: ignore[no-untyped-def]
        async for key, value in stream.items():
            if value < 0:
                del prices[key]
            else:
                prices[key] = value
            seen.append((f"set {key}", prices.get(key), len(prices)))

    return app, seen


def test_agents_read_write_and_the_topic_feeds_the_table() -> None:
    app, seen = _app()
    assert "for global store" in str(app.topology().describe())
    with TopologyTestDriver(app) as driver:
        table_topic = driver.create_input_topic("shop-prices-changelog", "str", "int64")
        orders = driver.create_input_topic("orders", "str", "str")
        updates = driver.create_input_topic("price-updates", "str", "int64")
        changelog = driver.create_output_topic("shop-prices-changelog", "str", "int64")
        table_topic.pipe_input("apple", 3, timestamp=1)
        orders.pipe_input("o1", "apple", timestamp=2)
        orders.pipe_input("o2", "pear", timestamp=3)
        updates.pipe_input("pear", 7, timestamp=4)  # read back at once by the writer
        orders.pipe_input("o3", "pear", timestamp=5)
        updates.pipe_input("apple", -1, timestamp=6)
        assert seen == [
            ("apple", 3, 1),
            ("pear", -1, 1),
            ("set pear", 7, 2),
            ("pear", 7, 2),
            ("set apple", -1, 1),
        ]
        assert changelog.read_key_values_to_list() == [("pear", 7), ("apple", None)]
        assert driver.get_key_value_store("prices").get("pear") == 7


def test_a_global_table_is_not_windowed_nor_declared_twice() -> None:
    app = App("shop")
    prices = app.GlobalTable("prices", partitions=3)
    assert prices.topic == "shop-prices-changelog" and prices.partitions == 3
    with pytest.raises(TopologyError, match="cannot be windowed"):
        prices.tumbling(60)
    with pytest.raises(ValueError, match="declared twice"):
        app.Table("prices")
    with pytest.raises(ValueError, match="partitions"):
        app.GlobalTable("other", partitions=0)
