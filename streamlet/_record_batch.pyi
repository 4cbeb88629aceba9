"""Types of the C record batch decoder (`streamlet/_native/record_batch.c`)."""

from typing import TypeVar

_T = TypeVar("_T", bound=tuple[object, ...])

def decode_batch(
    buffer: bytes, start: int, min_offset: int, /
) -> tuple[
    list[int], list[int], list[bytes | None], list[bytes | None], list[tuple[tuple[str, bytes], ...]] | None
]: ...
def decode_records(buffer: bytes, start: int, min_offset: int, record_type: type[_T], /) -> list[_T]: ...
def timestamped_values(timestamps: list[int], values: list[bytes | None], /) -> list[bytes | None]: ...
