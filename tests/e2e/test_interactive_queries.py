"""Interactive queries over HTTP: two WordCount worker processes, every word's count through either worker's port.

Each worker runs `streamlet worker examples.wordcount.app:app --config web_port=N` (application_server is then
127.0.0.1:N). Every word's count is fetched over HTTP from both workers (one answers from its own store, the
other forwards to it) and compared with an independent count of the input. Until the counts are complete, an
answer is either a retriable 503 with a known reason or a count; once the input is processed, every 200 must be
the ground truth. Then one worker stops: the other takes its partitions over, restores them, and answers for
every word by itself.
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.support.kafka import KafkaTestCluster
from tests.support.waiting import free_port
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts
from tests.support.workers import Workers, wordcount_workers

pytestmark = pytest.mark.e2e

STORE = "counts-store"
RETRIABLE = {"not_running", "rebalancing", "restoring", "no_owner", "not_owner", "owner_unreachable"}


async def _workers(kafka: KafkaTestCluster, tmp_path: Path, target: str) -> tuple[str, str, Workers]:
    return await wordcount_workers(kafka, tmp_path, name="streams-wordcount-iq", target=target)


@pytest.fixture
async def wordcount(kafka: KafkaTestCluster, tmp_path: Path) -> AsyncIterator[tuple[str, str, Workers]]:
    source, sink, workers = await _workers(kafka, tmp_path, "examples.wordcount.app:app")
    try:
        yield source, sink, workers
    finally:
        workers.stop_all()


@pytest.fixture
async def agents_wordcount(kafka: KafkaTestCluster, tmp_path: Path) -> AsyncIterator[tuple[str, str, Workers]]:
    source, sink, workers = await _workers(kafka, tmp_path, "examples.wordcount.agents:app")
    try:
        yield source, sink, workers
    finally:
        workers.stop_all()


async def _query(http: aiohttp.ClientSession, port: int, word: str) -> tuple[int, dict]:
    url = f"http://127.0.0.1:{port}/stores/{STORE}/{urllib.parse.quote(word, safe='')}"
    async with http.get(url) as response:
        return response.status, await response.json()


async def _query_all(
    http: aiohttp.ClientSession, port: int, truth: dict[str, int], timeout: float, reasons: set[str]
) -> dict[str, int]:
    """Every word's count through `port`, retrying 503s (whose reasons are collected) until `timeout`."""
    deadline = time.monotonic() + timeout
    pending = set(truth)
    got: dict[str, int] = {}
    limit = asyncio.Semaphore(16)

    async def one(word: str) -> None:
        async with limit:
            status, body = await _query(http, port, word)
        if status == 503:
            assert body["reason"] in RETRIABLE, body
            reasons.add(body["reason"])
            return
        assert status == 200, (word, status, body)
        got[word] = body["value"]
        pending.discard(word)

    while pending and time.monotonic() < deadline:
        await asyncio.gather(*(one(w) for w in sorted(pending)))
        if pending:
            await asyncio.sleep(0.5)
    assert not pending, f"{len(pending)} words never answered through port {port}, e.g. {sorted(pending)[:5]}"
    return got


async def _wait_serving(http: aiohttp.ClientSession, port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            async with http.get(f"http://127.0.0.1:{port}/metadata") as response:
                if response.status == 200:
                    return
        except aiohttp.ClientError:
            pass
        await asyncio.sleep(0.2)
    raise TimeoutError(f"no web server on port {port}")


async def test_every_word_through_either_worker_matches_the_ground_truth(kafka: KafkaTestCluster, wordcount) -> None:
    source, sink, workers = wordcount
    ports = [free_port(), free_port()]
    began = time.monotonic()
    async with aiohttp.ClientSession() as http:
        workers.start(0, web_port=str(ports[0]))
        await _wait_serving(http, ports[0])
        # before its first assignment a worker answers a retriable 503, never a count
        status, body = await _query(http, ports[0], "the")
        assert status == 503 and body["reason"] in RETRIABLE, body
        workers.start(1, web_port=str(ports[1]))
        await _wait_serving(http, ports[1])

        lines = real_text_lines() + [SEED_LINE]
        truth = expected_counts(lines)  # an independent count of the input
        await kafka.produce(source, [(None, line.encode()) for line in lines])
        assert await wait_for_counts(kafka, sink, truth, timeout=120) == truth  # the input is processed

        reasons: set[str] = set()
        for port in ports:
            got = await _query_all(http, port, truth, timeout=90, reasons=reasons)
            wrong = {w: (got[w], c) for w, c in truth.items() if got[w] != c}
            assert not wrong, f"port {port}: {len(wrong)} wrong counts, e.g. {list(wrong.items())[:5]}"

        # both workers own partitions, so each answered some words itself and forwarded the rest
        async with http.get(f"http://127.0.0.1:{ports[0]}/metadata/{STORE}") as response:
            hosts = {m["host"] for m in await response.json()}
        assert hosts == {f"127.0.0.1:{p}" for p in ports}

        # worker 1 leaves: worker 0 takes over its partitions (rebalance, restoration) and answers every word.
        # Meanwhile a poller asks worker 0 for words without pause: each answer is the truth or a retriable 503,
        # never a partly restored count or a 404 of a word whose partition is still restoring.
        watching = asyncio.Event()
        seen: list[tuple[int, str]] = []

        async def poll() -> None:
            words = sorted(truth)
            i = 0
            while not watching.is_set():
                word = words[i % len(words)]
                i += 1
                try:
                    status, body = await _query(http, ports[0], word)
                except aiohttp.ClientError as exc:
                    seen.append((-1, repr(exc)))
                    continue
                if status == 200:
                    assert body["value"] == truth[word], (word, body, truth[word])
                else:
                    assert status == 503 and body["reason"] in RETRIABLE, (word, status, body)
                seen.append((status, body.get("reason", "")))

        poller = asyncio.create_task(poll())
        code = await asyncio.to_thread(workers.stop, 1)
        assert code == 0, workers.log(1)[-3000:]
        got = await _query_all(http, ports[0], truth, timeout=120, reasons=reasons)
        watching.set()
        await poller
        assert got == truth
        assert all(status != -1 for status, _ in seen), seen[:5]
        reasons.update(r for status, r in seen if status == 503)
        for word in list(truth)[:50]:
            status, body = await _query(http, ports[0], word)
            assert status == 200 and body["host"] == f"127.0.0.1:{ports[0]}", body
    codes = workers.stop_all()
    assert codes[0] == 0, workers.log(0)[-3000:]
    print(
        f"interactive queries e2e: {len(truth)} words, {len(seen)} answers while worker 1 left, "
        f"503 reasons seen {sorted(reasons)}, "
        f"{time.monotonic() - began:.1f}s"
    )


async def test_a_faust_style_page_reads_the_table_from_either_worker(kafka: KafkaTestCluster, agents_wordcount) -> None:
    """The agents WordCount's `@app.page("/count/{word}")` reads its table; either worker answers every word."""
    source, sink, workers = agents_wordcount
    ports = [free_port(), free_port()]
    async with aiohttp.ClientSession() as http:
        for index, port in enumerate(ports):
            workers.start(index, web_port=str(port))
        for port in ports:
            await _wait_serving(http, port)
        lines = real_text_lines() + [SEED_LINE]
        truth = expected_counts(lines)
        await kafka.produce(source, [(None, line.encode()) for line in lines])
        assert await wait_for_counts(kafka, sink, truth, timeout=120) == truth

        limit = asyncio.Semaphore(16)

        async def count(port: int, word: str) -> int | None:
            async with limit, http.get(f"http://127.0.0.1:{port}/count/{urllib.parse.quote(word, safe='')}") as r:
                body = await r.json()
                if r.status == 503:
                    assert body["reason"] in RETRIABLE, body
                    return None
                assert r.status == 200 and body["word"] == word, (r.status, body)
                return int(body["count"])

        for port in ports:
            deadline = time.monotonic() + 60
            # the empty word (from lines with a leading separator) cannot be a `{word}` path segment
            pending = {w: c for w, c in truth.items() if w}
            while pending and time.monotonic() < deadline:
                words = sorted(pending)
                answers = await asyncio.gather(*(count(port, w) for w in words))
                for word, got in zip(words, answers, strict=True):
                    if got is not None:
                        assert got == truth[word], (port, word, got, truth[word])
                        del pending[word]
                if pending:
                    await asyncio.sleep(0.5)
            assert not pending, f"port {port}: {len(pending)} words unanswered"
    codes = workers.stop_all()
    assert codes == {0: 0, 1: 0}, (workers.log(0)[-3000:], workers.log(1)[-3000:])
