"""Interactive queries of window and session stores on the real broker: by key and time range, over HTTP and
in Python, a Faust windowed table read by event time in a page, and its closed-windows store hidden."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest

from streamlet import App
from streamlet.kafka.broker import _free_port
from streamlet.runtime.queries import QueryUnavailableError
from streamlet.topology.session_windows import SessionWindow, SessionWindows
from streamlet.topology.windows import TimeWindow, TimeWindows, Windowed
from streamlet.web import WebServer
from tests.support.kafka import KafkaTestCluster, Record, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

MINUTE = 60_000
HOUR = 3_600_000
T0 = 1_700_000_040_000  # a minute boundary (epoch ms)
# (user, event time): ann clicks twice in T0's minute, once in the next, once ten minutes later; bob once
CLICKS = [("ann", T0 + 1_000), ("ann", T0 + 2_000), ("bob", T0 + 5_000), ("ann", T0 + 61_000), ("ann", T0 + 600_000)]
WINDOW_STORE, SESSION_STORE, FAUST_TABLE = "clicks-per-minute", "click-sessions", "faust-per-minute"


async def _produce(kafka: KafkaTestCluster, topics: list[str]) -> None:
    for topic in topics:
        await kafka.produce(topic, [Record(user, b"click", timestamp_ms=at, partition=0) for user, at in CLICKS])


def _app(app_id: str, dsl_topic: str, agent_topic: str) -> App:
    app = App(app_id)
    grouped = app.stream(dsl_topic, key_serde="str", value_serde="str").group_by_key()
    grouped.windowed_by(TimeWindows.of_size_and_grace(MINUTE, HOUR)).count(WINDOW_STORE)
    grouped.windowed_by(SessionWindows.of_inactivity_gap_and_grace(30_000, HOUR)).count(SESSION_STORE)
    per_minute = app.Table(
        FAUST_TABLE, key_type=str, value_type=int, default=int, on_window_close=lambda window, value: None
    ).tumbling(60, expires=3600)

    @app.agent(app.topic(agent_topic, key_type=str, value_type=str), tables=[per_minute])
    async def count(stream: Any) -> None:
        async for user, _ in stream.items():
            per_minute[user] += 1

    @app.page("/clicks/{user}/{at_ms}")
    async def clicks_at(web: Any, request: Any, user: str, at_ms: str) -> Any:
        return web.json({"user": user, "clicks": per_minute[user].at(int(at_ms) / 1000)})

    return app


async def test_window_and_session_stores_answer_by_key_and_time(kafka: KafkaTestCluster, tmp_path: Any) -> None:
    dsl_topic = await kafka.create_topic("clicks-dsl", partitions=2)
    agent_topic = await kafka.create_topic("clicks-agent", partitions=2)
    app_id = unique_name("windowed-iq")
    for store in (WINDOW_STORE, SESSION_STORE, FAUST_TABLE, f"{FAUST_TABLE}-closed-windows"):
        kafka.track(f"{app_id}-{store}-changelog")
    for suffix in ("assignments", "metrics"):
        kafka.track(f"{app_id}-{suffix}")
    app = _app(app_id, dsl_topic, agent_topic)
    port = _free_port("127.0.0.1")
    client = app.streams(
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path),
        commit_interval_ms=100,
        application_server=f"127.0.0.1:{port}",
    )
    server = WebServer(client, port=port, pages=app._pages)
    await server.start()
    await client.start()
    try:
        await _produce(kafka, [dsl_topic, agent_topic])
        windows = client.window_store(WINDOW_STORE)

        def counted() -> bool:
            try:
                faust_windows = len(list(client.store(FAUST_TABLE).raw_all()))
                return windows.fetch("ann", T0 + 600_000) == 1 and faust_windows == 4  # ann's 3, bob's 1
            except QueryUnavailableError:
                return False

        await wait_until(counted, "every click counted in both apps")

        # Python: Kafka's ReadOnlyWindowStore / ReadOnlySessionStore
        assert windows.fetch("ann", T0) == 2 and windows.fetch("ann", T0 + MINUTE) == 1
        assert windows.fetch("ann", T0 + 2 * MINUTE) is None
        assert windows.fetch_range("ann", T0, T0 + MINUTE) == [
            (Windowed("ann", TimeWindow(T0, T0 + MINUTE)), 2),
            (Windowed("ann", TimeWindow(T0 + MINUTE, T0 + 2 * MINUTE)), 1),
        ]
        assert windows.windows_at("bob", T0 + 59_999) == [(Windowed("bob", TimeWindow(T0, T0 + MINUTE)), 1)]
        assert windows.windows_at("bob", T0 + MINUTE) == []
        sessions = client.session_store(SESSION_STORE)
        assert sessions.fetch("ann") == [
            (Windowed("ann", SessionWindow(T0 + 1_000, T0 + 2_000)), 2),
            (Windowed("ann", SessionWindow(T0 + 61_000, T0 + 61_000)), 1),
            (Windowed("ann", SessionWindow(T0 + 600_000, T0 + 600_000)), 1),
        ]
        assert sessions.find_sessions("ann", T0 + 50_000, T0 + 70_000) == [
            (Windowed("ann", SessionWindow(T0 + 61_000, T0 + 61_000)), 1)
        ]
        with pytest.raises(TypeError, match="window store: read it by key and time"):
            windows.get("ann")

        async with aiohttp.ClientSession() as http:

            async def get(path: str) -> tuple[int, Any]:
                async with http.get(f"http://127.0.0.1:{port}{path}") as response:
                    return response.status, await response.json()

            status, body = await get(f"/stores/{WINDOW_STORE}/ann")
            assert status == 200, body
            assert [(w["start"], w["end"], w["value"]) for w in body["windows"]] == [
                (T0, T0 + MINUTE, 2),
                (T0 + MINUTE, T0 + 2 * MINUTE, 1),
                (T0 + 600_000, T0 + 660_000, 1),
            ]
            status, body = await get(f"/stores/{WINDOW_STORE}/ann?at={T0 + 61_500}")
            assert (status, [w["value"] for w in body["windows"]]) == (200, [1])
            status, body = await get(f"/stores/{WINDOW_STORE}/ann?from={T0}&to={T0}")
            assert (status, [w["start"] for w in body["windows"]]) == (200, [T0])
            status, body = await get(f"/stores/{WINDOW_STORE}/ann?at={T0}&from={T0}")
            assert (status, body["error"]) == (400, "bad_request")
            status, body = await get(f"/stores/{WINDOW_STORE}/zoe")
            assert (status, body["windows"]) == (404, [])
            status, body = await get(f"/stores/{SESSION_STORE}/ann?from={T0 + 50_000}&to={T0 + 70_000}")
            assert (status, [(w["start"], w["end"], w["value"]) for w in body["windows"]]) == (
                200,
                [(T0 + 61_000, T0 + 61_000, 1)],
            )
            status, body = await get(f"/stores/{FAUST_TABLE}/ann?at={T0 + 1_500}")
            assert (status, [w["value"] for w in body["windows"]]) == (200, [2])

            # a page reads the Faust table's window by event time, not the wall clock's
            assert await get(f"/clicks/ann/{T0 + 61_000}") == (200, {"user": "ann", "clicks": 1})
            assert await get(f"/clicks/ann/{T0 + 30_000}") == (200, {"user": "ann", "clicks": 2})

            # the closed-windows bookkeeping store is not a queryable store
            status, metadata = await get("/metadata")
            assert status == 200
            stores = set(metadata[0]["stores"])
            assert {WINDOW_STORE, SESSION_STORE, FAUST_TABLE} <= stores
            assert not any(s.endswith("-closed-windows") for s in stores), stores
            status, body = await get(f"/stores/{FAUST_TABLE}-closed-windows/x")
            assert (status, body["error"]) == (404, "unknown_store")
    finally:
        await client.close()
        await server.stop()
