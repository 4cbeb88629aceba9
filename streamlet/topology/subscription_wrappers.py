"""The records of a foreign-key join (KIP-213) and their bytes, as Kafka Streams 4.1 writes them
(`kstream.internals.foreignkeyjoin`: `SubscriptionWrapperSerde`, `SubscriptionResponseWrapperSerde`,
`CombinedKeySchema`).

* A subscription (left table -> foreign side, keyed by the foreign key) is `version|0x80-if-no-hash`,
  the instruction byte, the 16-byte Murmur3 hash of the left value (absent for a delete), the serialized
  primary key, then (version 1, what 4.1 writes) the primary key's partition as a big-endian int32.
* A response (foreign side -> left table, keyed by the primary key) is `version(0)|0x80-if-no-hash`, the
  hash, then the serialized foreign value (nothing for none).
* The subscription store's key is the foreign key's length (int32), the foreign key, the primary key: a
  prefix scan by foreign key finds every primary key subscribed to it.

The nested keys and values are serialized for Kafka's pseudo-topics, `<subscription topic>-pk` / `-fk`.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Any

from streamlet.errors import SerializationError
from streamlet.serdes import Serde

SUBSCRIPTION_VERSION = 1  # SubscriptionWrapper.CURRENT_VERSION in Kafka 4.1
RESPONSE_VERSION = 0  # SubscriptionResponseWrapper.CURRENT_VERSION
HASH_SIZE = 16
_NO_HASH = 0x80
_INT32 = struct.Struct(">i")


class Instruction(enum.IntEnum):
    """What the foreign side does with a subscription (`SubscriptionWrapper.Instruction`)."""

    DELETE_KEY_NO_PROPAGATE = 0  # the old foreign key of a changed one: unsubscribe silently
    DELETE_KEY_AND_PROPAGATE = 1  # inner join, foreign key gone: unsubscribe and tell the left side (a delete)
    PROPAGATE_NULL_IF_NO_FK_VAL_AVAILABLE = 2  # answer even without a foreign value (left join, a new key)
    PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE = 3  # answer only with a foreign value


@dataclass(frozen=True, slots=True)
class SubscriptionWrapper:
    hash: bytes | None  # Murmur3 of the serialized left value; None when the left row was deleted
    instruction: Instruction
    primary_key: Any
    primary_partition: int | None  # None in version 0
    version: int = SUBSCRIPTION_VERSION


@dataclass(frozen=True, slots=True)
class SubscriptionResponseWrapper:
    original_value_hash: bytes | None
    foreign_value: Any
    primary_partition: int | None = None  # where the response goes; not written to the topic
    version: int = RESPONSE_VERSION


def encode_subscription(wrapper: SubscriptionWrapper, primary_key: bytes) -> bytes:
    """The bytes of `wrapper`, its primary key already serialized."""
    version = wrapper.version
    if version not in (0, 1):
        raise SerializationError(f"Unsupported SubscriptionWrapper version {version}")
    head = bytes((version if wrapper.hash is not None else version | _NO_HASH, int(wrapper.instruction)))
    body = head + (wrapper.hash or b"") + primary_key
    if version == 0:
        return body
    assert wrapper.primary_partition is not None
    return body + _INT32.pack(wrapper.primary_partition)


def decode_subscription(data: bytes) -> tuple[bytes | None, Instruction, bytes, int | None, int]:
    """`(hash, instruction, primary key bytes, primary partition, version)` of a subscription's bytes."""
    version, has_hash = data[0] & 0x7F, not data[0] & _NO_HASH
    instruction = Instruction(data[1])
    start = 2 + (HASH_SIZE if has_hash else 0)
    hash_ = data[2:start] if has_hash else None
    if version > 0:
        return hash_, instruction, data[start:-4], _INT32.unpack_from(data, len(data) - 4)[0], version
    return hash_, instruction, data[start:], None, version


class SubscriptionWrapperSerde:
    """`SubscriptionWrapperSerde`: the primary key with `primary_key_serde`, for `<topic>-pk`."""

    __slots__ = ("_pk",)

    def __init__(self, primary_key_serde: Serde) -> None:
        self._pk = primary_key_serde

    def serialize(self, topic: str, obj: SubscriptionWrapper | None) -> bytes | None:
        if obj is None:
            return None
        return encode_subscription(obj, self._pk.serialize(topic + "-pk", obj.primary_key) or b"")

    def deserialize(self, topic: str, data: bytes | None) -> SubscriptionWrapper | None:
        if data is None:
            return None
        hash_, instruction, pk, partition, version = decode_subscription(data)
        return SubscriptionWrapper(hash_, instruction, self._pk.deserialize(topic + "-pk", pk), partition, version)


class SubscriptionResponseWrapperSerde:
    """`SubscriptionResponseWrapperSerde`: the foreign value with the foreign table's value serde."""

    __slots__ = ("_value",)

    def __init__(self, foreign_value_serde: Serde) -> None:
        self._value = foreign_value_serde

    def serialize(self, topic: str, obj: SubscriptionResponseWrapper | None) -> bytes | None:
        if obj is None:
            return None
        value = None if obj.foreign_value is None else self._value.serialize(topic, obj.foreign_value)
        hash_ = obj.original_value_hash
        head = bytes((obj.version if hash_ is not None else obj.version | _NO_HASH,))
        return head + (hash_ or b"") + (value or b"")

    def deserialize(self, topic: str, data: bytes | None) -> SubscriptionResponseWrapper | None:
        if data is None:
            return None
        version, has_hash = data[0] & 0x7F, not data[0] & _NO_HASH
        start = 1 + (HASH_SIZE if has_hash else 0)
        value = self._value.deserialize(topic, data[start:]) if len(data) > start else None
        return SubscriptionResponseWrapper(data[1:start] if has_hash else None, value, None, version)


def combined_key(foreign_key: bytes, primary_key: bytes) -> bytes:
    """`CombinedKeySchema#toBytes`: the subscription store's key."""
    return _INT32.pack(len(foreign_key)) + foreign_key + primary_key


def combined_key_prefix(foreign_key: bytes) -> bytes:
    """`CombinedKeySchema#prefixBytes`: every subscription to `foreign_key` starts with it."""
    return _INT32.pack(len(foreign_key)) + foreign_key


def split_combined_key(data: bytes) -> tuple[bytes, bytes]:
    """`CombinedKeySchema#fromBytes`: `(foreign key bytes, primary key bytes)`."""
    (length,) = _INT32.unpack_from(data)
    return data[4 : 4 + length], data[4 + length :]
