"""The workers' /group page in headless Chromium: two WordCount workers on the real broker, each page showing
the whole group's placement, checked against what each worker says of itself at /status."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.support.chromium import Elements, chromium, dump_dom
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import free_port
from tests.support.workers import Workers

pytestmark = pytest.mark.e2e

TASKS = {f"{s}_{p}" for s in (0, 1) for p in range(6)}


@pytest.fixture
async def workers(kafka: KafkaTestCluster, tmp_path: Path) -> AsyncIterator[Workers]:
    source = await kafka.create_topic("streams-plaintext-input", partitions=6)
    sink = await kafka.create_topic("streams-wordcount-output", partitions=6)
    app_id = unique_name("streams-wordcount-group")
    for suffix in ("counts-store-repartition", "counts-store-changelog", "assignments", "metrics"):
        kafka.track(f"{app_id}-{suffix}")
    workers = Workers(kafka.bootstrap_servers, source, sink, app_id, tmp_path, {"metrics_interval_ms": "1000"})
    try:
        yield workers
    finally:
        workers.stop_all()


def _running_actives(page: Elements, header: list[str]) -> dict[str, set[str]]:
    """client -> tasks its row of the placement grid shows as RUNNING actives (cells titled with the state)."""
    out: dict[str, set[str]] = {}
    client = None
    column = 0
    for tag, attrs in page.elements:
        if tag == "tr" and "data-client" in attrs:
            client, column = attrs["data-client"], 0
            out[client] = set()
        elif tag == "td" and client is not None:
            if attrs.get("class") == "active" and attrs.get("title") == "RUNNING":
                out[client].add(header[column])
            column += 1
        elif tag == "table" and attrs.get("class") != "placement":
            client = None
    return out


def _grid_tasks(html: str) -> list[str]:
    """The placement grid's column heads (tasks), in order."""
    grid = html.split('<table class="placement">', 1)[1].split("</thead>", 1)[0]
    return [cell.split("</th>", 1)[0] for cell in grid.split("<th>")[2:]]


async def test_every_worker_shows_the_group_placement(workers: Workers) -> None:
    browser = chromium()  # skips, naming why, without Chromium
    ports = [free_port(), free_port()]
    for index, port in enumerate(ports):
        workers.start(index, threads=2, web_port=str(port))
    deadline = time.monotonic() + 120
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=20)) as http:
        while True:
            try:
                statuses = []
                for port in ports:
                    async with http.get(f"http://127.0.0.1:{port}/status") as response:
                        statuses.append(await response.json() if response.status == 200 else None)
                async with http.get(f"http://127.0.0.1:{ports[0]}/group") as response:
                    html = await response.text() if response.status == 200 else ""
            except aiohttp.ClientError:
                statuses, html = [None, None], ""
            own = {
                s["process_id"]: {t for t, e in s["tasks"].items() if e["state"] == "RUNNING"}
                for s in statuses
                if s is not None
            }
            # settled: both workers run a share of their own, the shares make up every task, and the page agrees
            settled = (
                len(own) == 2 and all(own.values()) and sorted(t for v in own.values() for t in v) == sorted(TASKS)
            )
            if (
                settled
                and '<table class="placement">' in html
                and _running_actives(Elements(html), _grid_tasks(html)) == own
            ):
                break
            assert time.monotonic() < deadline, f"the group never settled: {statuses} {html[-2000:]}"
            await asyncio.sleep(1)

    for port in ports:  # each worker shows the whole group, as the other worker's /status has it
        url = f"http://127.0.0.1:{port}/group"
        rendered = await asyncio.to_thread(dump_dom, url)
        page = Elements(rendered)
        header = _grid_tasks(rendered)
        assert browser and header == sorted(TASKS, key=lambda t: tuple(map(int, t.split("_"))))
        assert _running_actives(page, header) == own, (url, rendered[-3000:])
        assert len(page.find("section", class_="client")) == 2
        assert any("no probing rebalance pending" in t for t in page.text)
