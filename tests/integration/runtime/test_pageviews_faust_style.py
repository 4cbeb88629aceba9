"""The Faust-style page-view app on the real broker: `python examples/pageviews/app.py worker -l info`.

Typed JSON records go in (some without their optional fields, some malformed); the worker process runs the
agent through `app.main()`; every user's last count must equal a count of the valid input made here, by
Python's Counter over what was produced. The malformed records must reach the dead-letter topic, each
with its position and a message naming the model and the bad field.
"""

from __future__ import annotations

import asyncio
import collections
import json
import os
import random
import signal
import struct
import subprocess
import sys
import urllib.parse
from pathlib import Path

import aiohttp
import pytest

from streamlet import App, Record
from streamlet.kafka.broker import _free_port
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
PARTITIONS = 4


def _views(n: int, seed: int = 7) -> list[dict[str, object]]:
    """Valid page views as plain JSON objects; optional fields are left out of some, as a producer might."""
    rng = random.Random(seed)
    users = [f"user-{i}" for i in range(23)] + ["ünïcode", "with space"]
    out: list[dict[str, object]] = []
    for i in range(n):
        view: dict[str, object] = {"user": rng.choice(users), "page": f"/p/{rng.randrange(9)}"}
        if i % 3:
            view["duration_ms"] = rng.randrange(5_000)
        if i % 5 == 0:
            view["referrer"] = None if i % 2 else "https://example.org"
        out.append(view)
    return out


MALFORMED = [
    (b'{"user": 5, "page": "/x"}', "field 'user' must be str, got integer 5"),
    (b'{"page": "/x"}', "field 'user' is required but missing"),
    (b'{"user": "ann", "page": "/x", "duration_ms": "long"}', "field 'duration_ms' must be int"),
    (b"not json at all", "the value is not JSON"),
]


async def _latest_counts(kafka: KafkaTestCluster, topic: str) -> dict[str, int]:
    latest: dict[str, int] = {}
    for record in await kafka.drain(topic, PARTITIONS):
        latest[record.key.decode()] = struct.unpack(">q", record.value)[0]
    return latest


async def test_pageview_app_counts_typed_records_and_dead_letters_bad_ones(kafka: KafkaTestCluster, tmp_path) -> None:
    source = await kafka.create_topic("page-views", partitions=PARTITIONS)
    sink = await kafka.create_topic("views-per-user", partitions=PARTITIONS)
    dead = await kafka.create_topic("page-views-dlq", partitions=1)
    app_id = unique_name("pageviews")
    for suffix in ("by-user-repartition", "views-per-user-changelog"):
        kafka.track(f"{app_id}-{suffix}")

    views = _views(600)
    records = [(None, json.dumps(v).encode()) for v in views]
    for i, (data, _) in enumerate(MALFORMED):  # spread among the valid records
        records.insert(100 * (i + 1), (None, data))
    await kafka.produce(source, records)
    expected = collections.Counter(str(v["user"]) for v in views)

    env = {
        **os.environ,
        "PAGEVIEWS_APPLICATION_ID": app_id,
        "PAGEVIEWS_INPUT_TOPIC": source,
        "PAGEVIEWS_OUTPUT_TOPIC": sink,
    }
    cmd = [sys.executable, str(ROOT / "examples" / "pageviews" / "app.py"), "worker", "-l", "info"]
    cmd += ["--threads", "2", "--state-dir", str(tmp_path / "state"), "--bootstrap-servers", kafka.bootstrap_servers]
    for setting in ("commit_interval_ms=300", "deserialization_exception_handler=dead_letter"):
        cmd += ["--config", setting]
    cmd += ["--config", f"dead_letter_topic={dead}"]
    web_port = _free_port("127.0.0.1")
    cmd += ["--web-port", str(web_port)]
    log_path = tmp_path / "worker.log"
    with open(log_path, "wb") as log:
        worker = subprocess.Popen(cmd, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        latest: dict[str, int] = {}
        deadline = asyncio.get_running_loop().time() + 120
        while latest != dict(expected):
            assert worker.poll() is None, log_path.read_text(errors="replace")[-4000:]
            assert asyncio.get_running_loop().time() < deadline, f"counts so far {latest}, expected {dict(expected)}"
            await asyncio.sleep(1)
            latest = await _latest_counts(kafka, sink)
        assert latest == dict(expected)
        async with aiohttp.ClientSession() as session:  # the example's web view answers the same counts
            for user, views_of_user in expected.items():
                url = f"http://127.0.0.1:{web_port}/views/{urllib.parse.quote(user)}"
                for _ in range(300):  # 503 is retriable: a rebalance (a thread's probing join) or a restore
                    async with session.get(url) as response:
                        status, body = response.status, await response.text()
                    if status != 503:
                        break
                    await asyncio.sleep(0.2)
                assert status == 200, body
                assert json.loads(body) == {"user": user, "views": views_of_user}
    finally:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=60)
    assert code == 0, log_path.read_text(errors="replace")[-4000:]

    dead_letters = await kafka.drain(dead, 1, expected=len(MALFORMED))
    assert sorted(r.value for r in dead_letters) == sorted(data for data, _ in MALFORMED)
    # where each malformed record landed (the producer's partitioner chose), read back from the input topic
    positions = {r.value: (r.partition, r.offset) for r in await kafka.drain(source, PARTITIONS)}
    for record in dead_letters:
        headers = {k: v.decode() for k, v in record.headers}
        assert headers["__streams.errors.topic"] == source
        position = (int(headers["__streams.errors.partition"]), int(headers["__streams.errors.offset"]))
        assert position == positions[record.value]
        message = headers["__streams.errors.message"]
        assert f"cannot decode a PageView from topic '{source}'" in message
        assert dict(MALFORMED)[record.value] in message


class View(Record):
    user: str
    page: str


async def test_table_items_cover_every_partition_of_the_worker(kafka: KafkaTestCluster, tmp_path) -> None:
    """A report record makes the agent send `dict(counts.items())`: with one client, that is every user's count."""
    source = await kafka.create_topic("views", partitions=PARTITIONS)
    reports = await kafka.create_topic("reports", partitions=1)
    app_id = unique_name("pageviews-items")
    for suffix in ("by-user-repartition", "counts-changelog"):
        kafka.track(f"{app_id}-{suffix}")

    app = App(app_id)
    report_topic = app.topic(reports, value_serde="json")
    counts = app.Table("counts", key_type=str, value_type=int, default=int)

    @app.agent(app.topic(source, value_type=View), tables=[counts])
    async def count(views):
        async for view in views.group_by(View.user, name="by-user"):
            if view.page == "report":
                await report_topic.send(value={"items": dict(counts.items()), "len": len(counts)})
            else:
                counts[view.user] += 1

    views = [View(f"u{i % 17}", f"/{i}") for i in range(400)]
    expected = dict(collections.Counter(v.user for v in views))
    await kafka.produce(source, [(None, v.dumps()) for v in views])
    client = app.streams(
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path),
        num_stream_threads=2,
        commit_interval_ms=200,
    )
    await client.start()
    try:
        deadline = asyncio.get_running_loop().time() + 90
        report: dict[str, object] = {}
        while report.get("items") != expected:
            assert asyncio.get_running_loop().time() < deadline, f"last report {report}, expected {expected}"
            # the counts of other partitions may still be on their way: ask again until they are all in
            await kafka.produce(source, [(None, View("reporter", "report").dumps())])
            await asyncio.sleep(1)
            sent = await kafka.drain(reports, 1)
            report = json.loads(sent[-1].value) if sent else {}
        assert report == {"items": expected, "len": len(expected)}
    finally:
        await client.close()
