"""Poison pills among normal input: a null value, bytes that are not UTF-8, and a 2 MB line that is one word
(its repartition record is larger than the producer may send). Under each handler the worker lives, the pill
goes where the handler says, and every other word is counted exactly."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaProducer

from tests.chaos._report import report
from tests.support.kafka import KafkaTestCluster
from tests.support.wordcount import expected_counts, real_text_lines, wait_for_counts

pytestmark = pytest.mark.chaos

BIG = 2 * 1024 * 1024
PILLS: list[bytes | None] = [None, b"\xff\xfe not utf-8", b"x" * BIG]
LARGE_TOPIC = {"max.message.bytes": str(4 * BIG)}


async def produce_with_pills(kafka: KafkaTestCluster, topic: str, lines: list[str]) -> None:
    """The lines, with the pills spread among them, on one producer that may send the 2 MB record."""
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, max_request_size=4 * BIG)
    await producer.start()
    try:
        step = len(lines) // (len(PILLS) + 1)
        for i, line in enumerate(lines):
            await producer.send(topic, value=line.encode())
            if i and i % step == 0 and i // step <= len(PILLS):
                await producer.send(topic, key=b"pill", value=PILLS[i // step - 1])
        await producer.flush()
    finally:
        await producer.stop()


@pytest.mark.parametrize("mode", ["skip", "dead_letter"])
async def test_pills_are_skipped_or_dead_lettered_and_everything_else_counts(
    kafka: KafkaTestCluster, wordcount_app, mode: str
) -> None:
    dlq = await kafka.create_topic("chaos-dlq", partitions=1)
    handlers = (
        {
            "deserialization_exception_handler": "log_and_continue",
            "processing_exception_handler": "log_and_continue",
            "production_exception_handler": "continue",
        }
        if mode == "skip"
        else {
            "deserialization_exception_handler": "dead_letter",
            "processing_exception_handler": "dead_letter",
            "production_exception_handler": "dead_letter",
            "dead_letter_topic": dlq,
        }
    )
    source, sink, workers = await wordcount_app(source_config=LARGE_TOPIC, **handlers)
    lines = real_text_lines(1500)
    workers.start(0)
    await produce_with_pills(kafka, source, lines)
    input_done = time.monotonic()
    truth = expected_counts(lines)  # a null value has no words; the other two pills are not counted
    final = await wait_for_counts(kafka, sink, truth, timeout=120)
    assert final == truth
    assert workers.alive(0)
    report(f"poison pills ({mode})", final, truth, since=input_done)
    letters = await kafka.drain(dlq, 1)
    if mode == "skip":
        assert letters == []
        return
    assert len(letters) == 2, [(r.offset, len(r.value or b"")) for r in letters]
    not_utf8, too_large = letters
    headers = dict(not_utf8.headers)
    assert not_utf8.value == PILLS[1] and headers["__streams.errors.topic"] == source.encode()
    headers = dict(too_large.headers)
    assert too_large.value == b""  # too large for the dead-letter topic too: its position is in the headers
    assert headers["__streams.errors.exception"] == b"RecordTooLargeError"
    offset = int(headers["__streams.errors.offset"])
    assert offset > 0 and headers["__streams.errors.topic"] == source.encode()


async def test_with_fail_the_worker_stops_naming_the_record(kafka: KafkaTestCluster, wordcount_app) -> None:
    source, sink, workers = await wordcount_app(source_config=LARGE_TOPIC)
    workers.start(0)
    await produce_with_pills(kafka, source, real_text_lines(200))
    for _ in range(120):
        if not workers.alive(0):
            break
        await asyncio.sleep(0.5)
    assert workers.stop(0) != 0
    log = workers.log(0)
    assert "DeserializationFailure" in log and f"topic {source} partition" in log
    assert "deserialization_exception_handler='fail'" in log
