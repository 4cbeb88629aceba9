"""OffsetCheckpoint: Kafka Streams' `.checkpoint` format, byte for byte."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.errors import CheckpointError
from streamlet.state.checkpoint import OFFSET_UNKNOWN, OffsetCheckpoint

TOPIC = "streams-wordcount-counts-store-changelog"

# The four checkpoint files of the seed article (`cat /tmp/kafka-streams-0/streams-wordcount/1_*/.checkpoint`),
# written by Kafka Streams for tasks 1_0, 1_2, 1_3 and 1_4.
SEED_FILES = {
    "1_0": (b"0\n1\nstreams-wordcount-counts-store-changelog 0 1\n", TopicPartition(TOPIC, 0), 1),
    "1_2": (b"0\n1\nstreams-wordcount-counts-store-changelog 2 7\n", TopicPartition(TOPIC, 2), 7),
    "1_3": (b"0\n1\nstreams-wordcount-counts-store-changelog 3 5\n", TopicPartition(TOPIC, 3), 5),
    "1_4": (b"0\n1\nstreams-wordcount-counts-store-changelog 4 3\n", TopicPartition(TOPIC, 4), 3),
}


@pytest.mark.parametrize("task", sorted(SEED_FILES))
def test_seed_files_read_and_rewrite_byte_for_byte(tmp_path: Path, task: str) -> None:
    raw, tp, offset = SEED_FILES[task]
    path = tmp_path / ".checkpoint"
    path.write_bytes(raw)
    assert OffsetCheckpoint(path).read() == {tp: offset}

    rewritten = tmp_path / "rewritten"
    OffsetCheckpoint(rewritten).write({tp: offset})
    assert rewritten.read_bytes() == raw


def test_round_trip_many_partitions(tmp_path: Path) -> None:
    offsets = {TopicPartition("a-changelog", p): p * 10 for p in range(5)}
    offsets[TopicPartition("b-changelog", 3)] = OFFSET_UNKNOWN
    cp = OffsetCheckpoint(tmp_path / ".checkpoint")
    cp.write(offsets)
    assert cp.read() == offsets
    assert (tmp_path / ".checkpoint").read_text().splitlines()[:2] == ["0", "6"]


def test_missing_file_is_empty(tmp_path: Path) -> None:
    assert OffsetCheckpoint(tmp_path / ".checkpoint").read() == {}


def test_write_empty_deletes_file(tmp_path: Path) -> None:
    cp = OffsetCheckpoint(tmp_path / ".checkpoint")
    cp.write({TopicPartition("t", 0): 5})
    assert cp.path.exists()
    cp.write({})
    assert not cp.path.exists()
    cp.delete()  # idempotent


def test_atomic_write_leaves_no_temp_file(tmp_path: Path) -> None:
    cp = OffsetCheckpoint(tmp_path / ".checkpoint")
    cp.write({TopicPartition("t", 0): 5})
    cp.write({TopicPartition("t", 0): 6})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".checkpoint"]
    assert cp.read() == {TopicPartition("t", 0): 6}


@pytest.mark.parametrize("bad", [-1, -2, -3, -5, 1.5, True])
def test_write_rejects_invalid_offsets(tmp_path: Path, bad: object) -> None:
    cp = OffsetCheckpoint(tmp_path / ".checkpoint")
    cp.write({TopicPartition("t", 0): 1})
    with pytest.raises(CheckpointError, match="invalid offset"):
        cp.write({TopicPartition("t", 0): bad})  # type: ignore[dict-item]
    assert cp.read() == {TopicPartition("t", 0): 1}  # the old file is untouched


def test_invalid_offsets_are_skipped_and_decrement_the_count(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_text("0\n3\nt 0 5\nt 1 -1\nt 2 -4\n")
    assert OffsetCheckpoint(path).read() == {TopicPartition("t", 0): 5, TopicPartition("t", 2): OFFSET_UNKNOWN}


def test_whitespace_separators_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(b"0\r\n2\r\nt\t0   5\r\nt 1 6 \r\n")
    assert OffsetCheckpoint(path).read() == {TopicPartition("t", 0): 5, TopicPartition("t", 1): 6}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("1\n1\nt 0 5\n", "line 1: unknown offset checkpoint version 1"),
        ("0\n2\nt 0 5\n", "expected 2 entries but found 1"),
        ("0\n0\nt 0 5\n", "expected 0 entries but found 1"),
        ("0\n1\nt 0 5 9\n", "line 3: malformed entry"),
        ("0\n1\nt 0\n", "line 3: malformed entry"),
        ("0\n1\n t 0 5\n", "line 3: malformed entry"),
        ("0\n1\nt x 5\n", "line 3: partition 'x' is not an integer"),
        ("0\n1\nt 0 5x\n", "line 3: offset '5x' is not an integer"),
        ("0\n1\nt 0 99999999999999999999\n", "line 3: offset 99999999999999999999 is out of range"),
        ("zero\n", "line 1: version 'zero' is not an integer"),
        ("0\n", "file ended prematurely"),
        ("", "file ended prematurely"),
        ("0\n1\n\n", "line 3: malformed entry"),
        ("0\n 1\nt 0 5\n", "line 2: entry count ' 1' is not an integer"),
    ],
)
def test_malformed_files_raise_checkpoint_error_naming_file_and_line(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / ".checkpoint"
    path.write_text(content)
    with pytest.raises(CheckpointError) as info:
        OffsetCheckpoint(path).read()
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_binary_garbage_raises(tmp_path: Path) -> None:
    path = tmp_path / ".checkpoint"
    path.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CheckpointError, match="not UTF-8"):
        OffsetCheckpoint(path).read()
