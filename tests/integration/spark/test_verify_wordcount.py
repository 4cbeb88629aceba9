"""`streamlet verify wordcount` on the real broker: Spark's ground truth against plain Python, and the check of
hand-made output topics (right, wrong, malformed)."""

from __future__ import annotations

import argparse
import asyncio
import io
import struct
import zlib

import pytest

from tests.support.fixtures import TEXT_DIR
from tests.support.kafka import KafkaTestCluster
from tests.support.wordcount_reference import java_wordcount

pytest.importorskip("pyspark")

from streamlet.spark.cli import add_verify_parser  # noqa: E402
from streamlet.spark.session import get_spark  # noqa: E402
from streamlet.spark.wordcount import (  # noqa: E402
    Mismatch,
    compare,
    ground_truth_wordcount,
    latest_counts,
    read_output_counts,
)

pytestmark = pytest.mark.integration

TEXT = TEXT_DIR / "Apache-2.0.txt"
SEED_LINE = "a b c d e f g h i j k l m n o p q r s t u v w x y z"
OUTPUT_PARTITIONS = 2


def text_lines() -> list[str]:
    return TEXT.read_text(encoding="utf-8").splitlines() + [SEED_LINE]


@pytest.fixture(scope="module")
def spark():
    return get_spark()


@pytest.fixture(scope="module")
def expected() -> dict[str, int]:
    return java_wordcount(text_lines())


def _long(n: int) -> bytes:
    return struct.pack(">q", n)


async def write_counts(kafka: KafkaTestCluster, topic: str, counts: dict[str, int], *, stale: bool = True) -> None:
    """Like WordCount's output: each word in one partition (by crc32), earlier running counts before the final one."""
    by_partition: dict[int, list[tuple[bytes, bytes]]] = {p: [] for p in range(OUTPUT_PARTITIONS)}
    for word, count in sorted(counts.items()):
        records = by_partition[zlib.crc32(word.encode()) % OUTPUT_PARTITIONS]
        if stale and count > 1:
            records.append((word.encode(), _long(count - 1)))
    for word, count in sorted(counts.items()):
        by_partition[zlib.crc32(word.encode()) % OUTPUT_PARTITIONS].append((word.encode(), _long(count)))
    for partition, records in by_partition.items():
        await kafka.produce(topic, records, partition=partition)


def run_cli(*argv: str) -> tuple[int, str]:
    parser = argparse.ArgumentParser(prog="streamlet")
    add_verify_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["verify", "wordcount", *argv])
    out = io.StringIO()
    return args.handler(args, out=out), out.getvalue()


@pytest.fixture(scope="module")
async def input_topic(bootstrap_servers: str) -> str:
    """The license text, one line per record, spread over 3 partitions; shared by this module's tests."""
    cluster = KafkaTestCluster(bootstrap_servers)
    await cluster.start()
    try:
        topic = await cluster.create_topic("spark-wc-input", partitions=3)
        await cluster.produce(topic, [(None, line.encode()) for line in text_lines()])
        yield topic
    finally:
        await cluster.close()


async def test_ground_truth_matches_plain_python(
    spark, bootstrap_servers: str, input_topic: str, expected: dict[str, int]
) -> None:
    truth = await asyncio.to_thread(ground_truth_wordcount, spark, bootstrap_servers, input_topic)
    assert truth == expected
    assert all(truth[w] >= 1 for w in SEED_LINE.split())
    assert truth[""] > 0  # empty lines and indented lines count the empty word, as in Kafka Streams


async def test_wrong_and_missing_counts_are_reported(
    spark, kafka: KafkaTestCluster, input_topic: str, expected: dict[str, int]
) -> None:
    written = dict(expected)
    written["license"] += 1  # a wrong count
    del written["z"]  # a missing word
    output = await kafka.create_topic("spark-wc-output-wrong", partitions=OUTPUT_PARTITIONS)
    await write_counts(kafka, output, written)

    got = await asyncio.to_thread(latest_counts, spark, kafka.bootstrap_servers, output)
    assert got == written
    want = [Mismatch("license", expected["license"], expected["license"] + 1), Mismatch("z", expected["z"], None)]
    assert compare(expected, got) == want

    code, text = await asyncio.to_thread(
        run_cli, "--bootstrap-servers", kafka.bootstrap_servers, "--input-topic", input_topic, "--output-topic", output
    )
    assert code == 1, text
    assert "mismatches: 2\n" in text
    assert f"    {want[0]}\n    {want[1]}\n" in text
    assert f"{len(expected)} distinct words, {sum(expected.values())} words in total" in text

    code, text = await asyncio.to_thread(
        run_cli,
        "--bootstrap-servers",
        kafka.bootstrap_servers,
        "--input-topic",
        input_topic,
        "--output-topic",
        output,
        "--max-mismatches",
        "1",
    )
    assert code == 1
    assert str(want[0]) in text and str(want[1]) not in text and "... and 1 more" in text


async def test_correct_output_passes(kafka: KafkaTestCluster, input_topic: str, expected: dict[str, int]) -> None:
    output = await kafka.create_topic("spark-wc-output-right", partitions=OUTPUT_PARTITIONS)
    await write_counts(kafka, output, expected)
    code, text = await asyncio.to_thread(
        run_cli, "--bootstrap-servers", kafka.bootstrap_servers, "--input-topic", input_topic, "--output-topic", output
    )
    assert code == 0, text
    assert "mismatches: 0" in text and "OK:" in text


async def test_offset_range_split_keys_and_malformed_records(spark, kafka: KafkaTestCluster) -> None:
    source = await kafka.create_topic("spark-wc-range", partitions=1)
    await kafka.produce(source, [(None, b"a b"), (None, b"b c"), (None, b"c d"), (None, b"")])
    bootstrap = kafka.bootstrap_servers
    assert await asyncio.to_thread(ground_truth_wordcount, spark, bootstrap, source, "earliest", {0: 2}) == {
        "a": 1,
        "b": 2,
        "c": 1,
    }
    assert await asyncio.to_thread(ground_truth_wordcount, spark, bootstrap, source, {0: 2}) == {"c": 1, "d": 1, "": 1}

    output = await kafka.create_topic("spark-wc-odd-output", partitions=2)
    await kafka.produce(output, [(b"c", _long(1)), (b"d", _long(1)), (b"d", b"\x01")], partition=0)
    await kafka.produce(output, [(b"c", _long(1)), (None, _long(1))], partition=1)
    odd = await asyncio.to_thread(read_output_counts, spark, bootstrap, output)
    assert odd.counts == {"c": 1}
    assert odd.split_keys == {"c": (0, 1)}
    assert [(m.partition, m.offset, m.key, m.reason) for m in odd.malformed] == [
        (0, 2, b"d", "value of 1 bytes, not an 8-byte long"),
        (1, 1, None, "null key"),
    ]
    assert odd.records == 5

    code, text = await asyncio.to_thread(
        run_cli,
        "--bootstrap-servers",
        bootstrap,
        "--input-topic",
        source,
        "--output-topic",
        output,
        "--starting-offsets",
        "0:2",
    )
    assert code == 1, text
    assert "key in several partitions: 'c' in partitions [0, 1]" in text
    assert "malformed output record at partition 0 offset 2" in text
    assert "missing      'd': expected 1" in text and "missing      '': expected 1" in text


async def test_missing_topic_is_an_error(kafka: KafkaTestCluster, capsys: pytest.CaptureFixture) -> None:
    missing = "no-such-topic-xyz"
    code, _ = await asyncio.to_thread(
        run_cli, "--bootstrap-servers", kafka.bootstrap_servers, "--input-topic", missing, "--output-topic", missing
    )
    assert code == 2
    assert "topic 'no-such-topic-xyz' does not exist" in capsys.readouterr().err
