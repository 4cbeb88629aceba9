"""Murmur3 x64 128-bit hash, as Kafka Streams' `org.apache.kafka.streams.state.internals.Murmur3.hash128`.

A foreign-key join hashes the serialized left value it subscribes with, and drops a response whose hash no
longer matches the current left value (KIP-213): the two sides must hash alike, so this is Kafka's function
(seed 104729) bit for bit. The result is the two 64-bit halves written big-endian, as the subscription
wrappers carry them on the wire.
"""

from __future__ import annotations

import struct

DEFAULT_SEED = 104729
_MASK = (1 << 64) - 1
_C1 = 0x87C37B91114253D5
_C2 = 0x4CF5AD432745937F
_BLOCK = struct.Struct("<QQ")
_HASH = struct.Struct(">QQ")


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & _MASK


def _fmix(h: int) -> int:
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & _MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & _MASK
    return h ^ (h >> 33)


def _mix1(k1: int) -> int:
    return (_rotl((k1 * _C1) & _MASK, 31) * _C2) & _MASK


def _mix2(k2: int) -> int:
    return (_rotl((k2 * _C2) & _MASK, 33) * _C1) & _MASK


def hash128(data: bytes, seed: int = DEFAULT_SEED) -> bytes:
    """The 16 bytes Kafka writes for `Murmur3.hash128(data)` (`putLong(h[0]); putLong(h[1])`)."""
    length = len(data)
    h1 = h2 = seed & _MASK
    end = length - length % 16
    for offset in range(0, end, 16):
        k1, k2 = _BLOCK.unpack_from(data, offset)
        h1 ^= _mix1(k1)
        h1 = (_rotl(h1, 27) + h2) & _MASK
        h1 = (h1 * 5 + 0x52DCE729) & _MASK
        h2 ^= _mix2(k2)
        h2 = (_rotl(h2, 31) + h1) & _MASK
        h2 = (h2 * 5 + 0x38495AB5) & _MASK
    tail = data[end:]
    if len(tail) > 8:
        h2 ^= _mix2(int.from_bytes(tail[8:], "little"))
    if tail:
        h1 ^= _mix1(int.from_bytes(tail[:8], "little"))
    h1 ^= length
    h2 ^= length
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    h1, h2 = _fmix(h1), _fmix(h2)
    h1 = (h1 + h2) & _MASK
    h2 = (h2 + h1) & _MASK
    return _HASH.pack(h1, h2)
