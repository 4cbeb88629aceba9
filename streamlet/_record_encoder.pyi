"""Types of the C record batch encoder (`streamlet/_native/record_encoder.c`)."""

from collections.abc import Sequence

def encode_records(
    records: list[tuple[bytes | None, bytes | None, int | None, Sequence[tuple[str, bytes]]]],
    start: int,
    batch_size: int,
    now_ms: int,
    /,
) -> tuple[bytes, int, int, int]: ...
def build_batch(
    body: bytes,
    count: int,
    first_timestamp: int,
    max_timestamp: int,
    attributes: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    /,
) -> bytes: ...

SOURCE_SHA256: str
