"""Types of the C record batch decoder (`streamlet/_native/record_batch.c`)."""

def decode_batch(
    buffer: bytes, start: int, min_offset: int, /
) -> tuple[
    list[int], list[int], list[bytes | None], list[bytes | None], list[tuple[tuple[str, bytes], ...]] | None
]: ...
def timestamped_values(timestamps: list[int], values: list[bytes | None], /) -> list[bytes | None]: ...
