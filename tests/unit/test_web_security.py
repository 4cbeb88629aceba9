"""The web server bound for other workers: HTTPS and a token; a request without the token is 401, and a query
forwarded to the key's owner carries it (over HTTPS, checking the owner's certificate)."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from streamlet.app_commands import parse_config_pairs
from streamlet.assignment.protocol import HostTasks
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.kafka.certificates import make_tls_files
from streamlet.kafka.security import Password
from streamlet.runtime.queries import partition_for_key
from streamlet.task_id import TaskId
from streamlet.web import SERVED_BY_HEADER, WebServer
from streamlet.web_security import WebSecurity
from tests.support.local_tasks import STORE, SUB, word_on
from tests.unit.test_web import COUNTS, _Client

TOKEN = "worker-token-2718"


@pytest.fixture
async def secured(tmp_path: Path) -> AsyncIterator[tuple[WebServer, WebServer, ssl.SSLContext]]:
    tls = make_tls_files(tmp_path)  # the broker certificate names 127.0.0.1: both servers use it
    security = WebSecurity(str(tls.broker), str(tls.broker), str(tls.ca), Password(TOKEN))
    a, b = _Client([0, 1, 2], COUNTS), _Client([3, 4, 5], COUNTS)
    servers = WebServer(a, security=security), WebServer(b, security=security)
    for client, server in zip((a, b), servers, strict=True):
        await server.start()
        client.metadata_state.local_host = f"127.0.0.1:{server.port}"
    by_host = {
        a.metadata_state.local_host: HostTasks(frozenset(TaskId(SUB, p) for p in (0, 1, 2))),
        b.metadata_state.local_host: HostTasks(frozenset(TaskId(SUB, p) for p in (3, 4, 5))),
    }
    for client in (a, b):
        client.metadata_state.assignment_applied("t1", by_host)
    try:
        yield servers[0], servers[1], ssl.create_default_context(cafile=str(tls.ca))
    finally:
        for server in servers:
            await server.stop()


async def test_https_with_the_token_answers_and_forwards(
    secured: tuple[WebServer, WebServer, ssl.SSLContext],
) -> None:
    server_a, server_b, context = secured
    word = word_on(4)  # b's partition, asked of a: forwarded
    assert partition_for_key(word.encode(), 6) == 4
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(ssl=context)) as http:
        url = f"https://127.0.0.1:{server_a.port}/stores/{STORE}/{word}"
        async with http.get(url, headers={"Authorization": f"Bearer {TOKEN}"}) as answer:
            assert answer.status == 200, await answer.text()
            assert (await answer.json())["value"] == COUNTS[word]
            assert answer.headers[SERVED_BY_HEADER] == f"127.0.0.1:{server_b.port}"  # b answered a's forward
        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
            async with http.get(url, headers=headers) as answer:
                assert answer.status == 401
                assert answer.headers["WWW-Authenticate"] == "Bearer"
                assert (await answer.json())["error"] == "unauthorized"
        async with http.get(f"https://127.0.0.1:{server_b.port}/metrics") as answer:
            assert answer.status == 401  # every endpoint
    async with aiohttp.ClientSession() as plain:
        with pytest.raises(aiohttp.ClientError):  # plain HTTP to the TLS port gets no answer
            async with plain.get(f"http://127.0.0.1:{server_a.port}/metadata") as answer:
                await answer.read()


def test_web_settings_from_the_config(tmp_path: Path) -> None:
    tls = make_tls_files(tmp_path)
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    config = StreamsConfig(
        "app", web_ssl_certfile=str(tls.broker), web_ssl_keyfile=str(tls.broker), web_token_file=str(token_file)
    )
    assert config.web_security.tls and config.web_security.authorized(f"Bearer {TOKEN}")
    assert TOKEN not in repr(StreamsConfig("app", web_token=TOKEN))
    with pytest.raises(ConfigError, match="never goes on the command line; set \\$STREAMLET_WEB_TOKEN"):
        parse_config_pairs([f"web_token={TOKEN}"])
    with pytest.raises(ConfigError, match="web_ssl_certfile and web_ssl_keyfile go together"):
        StreamsConfig("app", web_ssl_certfile=str(tls.broker))
