"""OffsetCheckpoint: the `.checkpoint` file of a task directory, byte-compatible with Kafka Streams.

The file records, per changelog partition, the offset of the last changelog record that is reflected in the
on-disk state store. After a restart, restoration resumes right after it instead of replaying the whole
changelog, and the assignor's lag computation (offset sums) reads it for task directories this client holds
but does not run. Keeping Kafka Streams' exact format lets a streamlet state directory and a Kafka Streams
one be read by the same tools, and lets tests use real Kafka Streams files as fixtures.

Format (UTF-8 text)::

    0                              <- version; only 0 exists
    <n>                            <- number of entries
    <topic> <partition> <offset>   <- n lines, fields separated by whitespace (regex \\s+)
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.errors import CheckpointError

log = logging.getLogger(__name__)

#: Offset written for a logged store whose changelog position is not known (Kafka's `OFFSET_UNKNOWN`).
OFFSET_UNKNOWN = -4

CHECKPOINT_FILE_NAME = ".checkpoint"
VERSION = 0

_WHITESPACE = re.compile(r"\s+", re.ASCII)  # Java's \s is ASCII-only
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # what Java's BufferedReader.readLine splits on
# Java's Integer.parseInt / Long.parseLong: optional sign and ASCII digits, nothing else (Python's int()
# would also accept surrounding blanks and underscores, which Kafka Streams rejects).
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)


def is_valid_offset(offset: int) -> bool:
    """Offsets a checkpoint may hold: a real offset (>= 0) or the OFFSET_UNKNOWN sentinel."""
    return offset >= 0 or offset == OFFSET_UNKNOWN


class OffsetCheckpoint:
    """Reads and atomically writes one checkpoint file (Kafka Streams' `OffsetCheckpoint`)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"OffsetCheckpoint({str(self.path)!r})"

    # ------------------------------------------------------------------ read

    def read(self) -> dict[TopicPartition, int]:
        """Return the checkpointed offsets; a missing file means "no checkpoint" and gives `{}`.

        Entries whose offset is invalid (negative and not OFFSET_UNKNOWN) are skipped with a warning and
        decrement the expected count, as Kafka Streams does, so one bad entry costs a restore of that
        partition rather than the whole task. Anything else that is off raises CheckpointError naming the
        file and line, so the caller can treat the checkpoint as absent and wipe the stores.
        """
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise CheckpointError(f"cannot read checkpoint file {self.path}: {exc}") from exc
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckpointError(f"checkpoint file {self.path} is not UTF-8 text: {exc}") from exc

        lines = _java_lines(text)
        version = self._parse_int(lines, 0, "version", _INT32)
        if version != VERSION:
            raise CheckpointError(
                f"checkpoint file {self.path}, line 1: unknown offset checkpoint version {version} "
                f"(only {VERSION} is supported)"
            )
        expected = self._parse_int(lines, 1, "entry count", _INT32)

        offsets: dict[TopicPartition, int] = {}
        for index in range(2, len(lines)):
            line = lines[index]
            pieces = _java_split(line)
            if len(pieces) != 3:
                raise CheckpointError(
                    f"checkpoint file {self.path}, line {index + 1}: malformed entry {line!r} "
                    f"(expected '<topic> <partition> <offset>')"
                )
            topic = pieces[0]
            partition = self._to_int(pieces[1], index, "partition", _INT32)
            offset = self._to_int(pieces[2], index, "offset", _INT64)
            if is_valid_offset(offset):
                offsets[TopicPartition(topic, partition)] = offset
            else:
                log.warning(
                    "Skipping invalid offset %d for %s-%d in checkpoint file %s",
                    offset,
                    topic,
                    partition,
                    self.path,
                )
                expected -= 1
        if len(offsets) != expected:
            raise CheckpointError(f"checkpoint file {self.path}: expected {expected} entries but found {len(offsets)}")
        return offsets

    def _parse_int(self, lines: list[str], index: int, what: str, bounds: tuple[int, int]) -> int:
        if index >= len(lines):
            raise CheckpointError(f"checkpoint file {self.path}: file ended prematurely (no {what} line)")
        return self._to_int(lines[index], index, what, bounds)

    def _to_int(self, text: str, index: int, what: str, bounds: tuple[int, int]) -> int:
        if _JAVA_INT.fullmatch(text) is None:
            raise CheckpointError(f"checkpoint file {self.path}, line {index + 1}: {what} {text!r} is not an integer")
        value = int(text)
        if not bounds[0] <= value <= bounds[1]:
            raise CheckpointError(f"checkpoint file {self.path}, line {index + 1}: {what} {value} is out of range")
        return value

    # ------------------------------------------------------------------ write

    def write(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Atomically replace the file with `offsets`; an empty mapping deletes the file.

        Write to `<file>.tmp`, fsync it, `os.replace` it over the file and fsync the directory: a crash
        leaves either the old or the new checkpoint, never a torn one (a torn checkpoint would be rejected
        on read and force a full restore). Offsets must be >= 0 or OFFSET_UNKNOWN.
        """
        if not offsets:
            self.delete()
            return
        lines = [str(VERSION), str(len(offsets))]
        for tp, offset in offsets.items():
            if isinstance(offset, bool) or not isinstance(offset, int) or not is_valid_offset(offset):
                raise CheckpointError(
                    f"refusing to write invalid offset {offset!r} for {tp.topic}-{tp.partition} "
                    f"to checkpoint file {self.path} (offsets must be >= 0 or {OFFSET_UNKNOWN})"
                )
            if _WHITESPACE.search(tp.topic) or not tp.topic:
                raise CheckpointError(f"topic name {tp.topic!r} cannot be written to checkpoint file {self.path}")
            lines.append(f"{tp.topic} {tp.partition} {offset}")
        data = ("\n".join(lines) + "\n").encode("utf-8")

        tmp = self.path.with_name(self.path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.path)
        _fsync_dir(self.path.parent)

    def delete(self) -> None:
        """Remove the checkpoint (no-op if absent): "no checkpoint" means "restore from the beginning"."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            return
        _fsync_dir(self.path.parent)


def _java_lines(text: str) -> list[str]:
    """The lines `BufferedReader.readLine` would return: a final line break does not start a new line."""
    if not text:
        return []
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def _java_split(line: str) -> list[str]:
    """`line.split("\\\\s+")` with Java's semantics: a leading separator yields an empty first field,
    trailing empty fields are dropped."""
    pieces = _WHITESPACE.split(line)
    while len(pieces) > 1 and pieces[-1] == "":
        pieces.pop()
    return pieces


def _fsync_dir(directory: Path) -> None:
    """Make a rename/unlink in `directory` durable. Best effort: some filesystems refuse to fsync a dir."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
