"""What a task commits with each input offset: the partition's time (Kafka Streams' `TopicPartitionMetadata`).

Kafka Streams puts each input partition's partition time (the largest timestamp it processed there) into
the offset commit's metadata string, so that a task that restarts or moves resumes with the stream time it
had: stream-time punctuation, `timestamp_extractor`s given the partition time, and the task's stream time
carry on from where the last commit left them instead of from "unknown". The format is Kafka's, so a
streamlet application and a Kafka Streams one read each other's commits:

    base64( version byte 2 | partition time: int64 big-endian | processor metadata )

where processor metadata is empty, or an int32 entry count then per entry an int32 length, the UTF-8 key
and an int64 value (Kafka's `ProcessorMetadata`, which its emit-on-window-close aggregations use). Version
1 has no processor metadata. Anything else decodes to an unknown time (-1), as Kafka logs and moves on.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field

from streamlet.topology.timestamps import UNKNOWN

__all__ = ["UNKNOWN", "TopicPartitionMetadata", "merge_processor_metadata"]

LATEST_MAGIC_BYTE = 2
_HEADER = struct.Struct(">bq")
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")


@dataclass(frozen=True)
class TopicPartitionMetadata:
    """One input partition's committed time, plus the task's processor metadata."""

    partition_time: int
    processor_metadata: Mapping[str, int] = field(default_factory=dict)

    def encode(self) -> str:
        parts = [_HEADER.pack(LATEST_MAGIC_BYTE, self.partition_time)]
        if self.processor_metadata:
            parts.append(_INT.pack(len(self.processor_metadata)))
            for key, value in self.processor_metadata.items():
                raw = key.encode()
                parts += [_INT.pack(len(raw)), raw, _LONG.pack(value)]
        return base64.b64encode(b"".join(parts)).decode("ascii")

    @classmethod
    def decode(cls, metadata: str | None) -> TopicPartitionMetadata:
        """Kafka's `TopicPartitionMetadata.decode`: never raises; what it cannot read is an unknown time."""
        if not metadata:
            return cls(UNKNOWN)
        try:
            # Java's decoder does not require the padding
            raw = base64.b64decode(metadata + "=" * (-len(metadata) % 4), validate=True)
            version, partition_time = _HEADER.unpack_from(raw)
        except (binascii.Error, struct.error, ValueError):
            return cls(UNKNOWN)
        if version == 1:
            return cls(partition_time)
        if version != LATEST_MAGIC_BYTE:
            return cls(UNKNOWN)
        try:
            return cls(partition_time, _decode_processor_metadata(raw[_HEADER.size :]))
        except (struct.error, UnicodeDecodeError):  # Kafka keeps the time it already read
            return cls(partition_time)


def _decode_processor_metadata(raw: bytes) -> dict[str, int]:
    if not raw:
        return {}
    (count,) = _INT.unpack_from(raw)
    position = _INT.size
    out: dict[str, int] = {}
    for _ in range(count):
        (length,) = _INT.unpack_from(raw, position)
        position += _INT.size
        key = raw[position : position + length].decode()
        position += length
        (out[key],) = _LONG.unpack_from(raw, position)
        position += _LONG.size
    return out


def merge_processor_metadata(into: dict[str, int], other: Mapping[str, int]) -> None:
    """Kafka's `ProcessorMetadata.update`: missing keys are added, existing ones keep the larger value."""
    for key, value in other.items():
        if key not in into or into[key] < value:
            into[key] = value
