"""The deployed shape on the SASL_SSL broker: two WordCount worker processes configured only by the environment
(Kafka security, and the web server's HTTPS and token), each a static member; every word's count is read over
HTTPS through one worker, which forwards (with the token) to the other for the keys it owns."""

from __future__ import annotations

import asyncio
import socket
import ssl
import time
from pathlib import Path

import aiohttp
import pytest

from streamlet.kafka.broker import BrokerStatus
from tests.integration.security.test_secured_wordcount import client_settings, security_of
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import expected_counts, real_text_lines, wait_for_counts
from tests.support.workers import Workers

pytestmark = pytest.mark.integration

TOKEN = "secured-workers-token-161803"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_two_secured_workers_answer_every_word_over_https(sasl_ssl_broker: BrokerStatus, tmp_path: Path) -> None:
    settings = client_settings(sasl_ssl_broker)
    kafka = KafkaTestCluster(sasl_ssl_broker.bootstrap_servers, security_of(settings))
    await kafka.start()
    tls = Path(settings["ssl_cafile"]).parent
    env = {
        **sasl_ssl_broker.client_settings(),
        "STREAMLET_WEB_SSL_CERTFILE": str(tls / "broker.pem"),  # names 127.0.0.1, signed by the broker's CA
        "STREAMLET_WEB_SSL_KEYFILE": str(tls / "broker.pem"),
        "STREAMLET_WEB_SSL_CAFILE": str(tls / "ca.pem"),
        "STREAMLET_WEB_TOKEN": TOKEN,
    }
    source = await kafka.create_topic("secured-input", partitions=4)
    sink = await kafka.create_topic("secured-output", partitions=4)
    app_id = unique_name("secured-workers")
    for suffix in ("counts-store-repartition", "counts-store-changelog", "assignments", "metrics"):
        kafka.track(f"{app_id}-{suffix}")
    workers = Workers(sasl_ssl_broker.bootstrap_servers, source, sink, app_id, tmp_path, env=env)
    ports = [_free_port(), _free_port()]
    lines = real_text_lines(200)
    truth = expected_counts(lines)
    context = ssl.create_default_context(cafile=str(tls / "ca.pem"))
    try:
        for i, port in enumerate(ports):
            workers.start(i, threads=1, web_port=str(port), group_instance_id=f"worker-{i}")
        await kafka.produce(source, [(None, line.encode()) for line in lines])
        assert await wait_for_counts(kafka, sink, truth, partitions=4, timeout=120) == truth
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as http:
            await _both_active(http, ports[0])
            served = await _query_all(http, ports[0], truth)
            assert {word: value for word, (value, _) in served.items()} == truth
            assert {host for _, host in served.values()} == {f"127.0.0.1:{p}" for p in ports}  # both answered
            async with http.get(f"https://127.0.0.1:{ports[1]}/metadata") as answer:
                assert answer.status == 401
    finally:
        workers.stop_all()
        await kafka.close()
    for i in range(2):
        assert TOKEN not in workers.log(i)


async def _both_active(http: aiohttp.ClientSession, port: int, timeout: float = 60) -> None:
    """Until the metadata `port` serves shows both workers with active tasks (the group settled)."""
    deadline = time.monotonic() + timeout
    while True:
        async with http.get(f"https://127.0.0.1:{port}/metadata", headers={"Authorization": f"Bearer {TOKEN}"}) as r:
            hosts = [m for m in await r.json() if m["active_tasks"]] if r.status == 200 else []
        if len(hosts) == 2:
            return
        assert time.monotonic() < deadline, f"the group never spread over both workers: {hosts}"
        await asyncio.sleep(0.5)


async def _query_all(
    http: aiohttp.ClientSession, port: int, truth: dict[str, int], timeout: float = 60
) -> dict[str, tuple[int, str]]:
    """Every word's (count, serving host) through `port`, retrying 503s (a rebalance settling) until `timeout`."""
    deadline = time.monotonic() + timeout
    got: dict[str, tuple[int, str]] = {}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    while len(got) < len(truth):
        for word in sorted(set(truth) - set(got)):
            url = f"https://127.0.0.1:{port}/stores/counts-store/{word}"
            async with http.get(url, headers=headers) as answer:
                body = await answer.json()
                if answer.status == 200 and body["value"] == truth[word]:
                    got[word] = (body["value"], answer.headers["X-Streamlet-Served-By"])
                else:
                    assert answer.status in (200, 503), body
        if len(got) < len(truth):
            assert time.monotonic() < deadline, f"{len(truth) - len(got)} words unanswered"
            await asyncio.sleep(0.5)
    return got
