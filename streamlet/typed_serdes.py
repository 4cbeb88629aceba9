"""Serdes chosen from Python types, and the build-time check that a serde fits a declared type.

`value_type=PageView` on a topic or table means `ModelSerde(PageView)`; `key_type=str` means Kafka's
StringSerde. A model is a `streamlet.Record` subclass or a pydantic v2 model (anything with
`model_validate_json` and `model_dump_json`; pydantic itself is not a dependency).

Why check at build time: a serde that cannot carry the declared type fails only at the first record, in a
running worker, possibly hours later. When the type is declared, `check_serde_fits` says so before the
worker starts.
"""

from __future__ import annotations

import collections.abc
import json
import types
import typing
from typing import Any

from streamlet.errors import SerializationError, TopologyError
from streamlet.models import FieldDescriptor, Record, ValidationError
from streamlet.serdes import BytesSerde, IntegerSerde, JsonSerde, LongSerde, Serde, StringSerde

__all__ = [
    "ModelSerde",
    "check_serde_fits",
    "element_type",
    "is_model",
    "result_type",
    "serde_for_type",
    "serde_type",
]


def is_model(tp: object) -> bool:
    """A Record subclass or a pydantic-style model class."""
    if not isinstance(tp, type):
        return False
    if issubclass(tp, Record):
        return True
    return callable(getattr(tp, "model_validate_json", None)) and callable(getattr(tp, "model_dump_json", None))


class ModelSerde:
    """A model's instances as UTF-8 JSON; decoding validates, and every failure names the model and the topic."""

    __slots__ = ("model",)

    def __init__(self, model: type) -> None:
        if not is_model(model):
            raise TypeError(f"ModelSerde needs a streamlet.Record subclass or a pydantic model, got {model!r}")
        self.model = model

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        if obj is None:
            return None
        if not isinstance(obj, self.model):
            raise SerializationError(
                f"{self!r} cannot serialize a {type(obj).__name__} for topic {topic!r}: it takes "
                f"{self.model.__name__} instances"
            )
        if isinstance(obj, Record):
            return obj.dumps()
        return str(obj.model_dump_json()).encode()  # type: ignore[attr-defined]  # a pydantic model

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        if data is None:
            return None
        model = self.model
        try:
            if issubclass(model, Record):
                return model.loads(data)
            return model.model_validate_json(data)  # type: ignore[attr-defined]
        except ValidationError as exc:
            raise SerializationError(f"cannot decode a {model.__name__} from topic {topic!r}: {exc}") from exc
        except ValueError as exc:  # pydantic's ValidationError is a ValueError
            raise SerializationError(
                f"cannot decode a {model.__name__} from topic {topic!r}: {_pydantic_summary(exc)}"
            ) from exc

    def __repr__(self) -> str:
        return f"ModelSerde({self.model.__name__})"


def _pydantic_summary(exc: ValueError) -> str:
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return str(exc)
    try:
        parts = [f"field {'.'.join(map(str, e['loc'])) or '(root)'!r} {e['msg']}" for e in errors()]
    except (TypeError, KeyError):  # not pydantic's shape after all
        return str(exc)
    return "; ".join(parts) or json.dumps(str(exc))


def serde_for_type(tp: Any) -> Serde:
    """The serde for values of type `tp`: a model's JSON, Kafka's str/int64/bytes serdes, else JSON."""
    if is_model(tp):
        return ModelSerde(tp)
    if tp is str:
        return StringSerde()
    if tp is bytes:
        return BytesSerde()
    if tp is int:
        return LongSerde()
    return JsonSerde()


def serde_type(serde: Serde) -> type | None:
    """The one Python type a serde produces, or None for one that carries several (JSON)."""
    if isinstance(serde, ModelSerde):
        return serde.model
    if isinstance(serde, StringSerde):
        return str
    if isinstance(serde, BytesSerde):
        return bytes
    if isinstance(serde, LongSerde | IntegerSerde):
        return int
    return None


def check_serde_fits(serde: Serde, tp: Any, where: str) -> None:
    """Raise TopologyError when `serde` cannot carry values of the declared type `tp` (checked where known).

    A serde streamlet does not know (a user's own) is trusted; JSON carries anything but models.
    """
    tp = typing.get_origin(tp) or tp  # dict[str, int] is a dict
    if tp is None or tp is Any or not isinstance(tp, type):
        return
    carried = serde_type(serde)
    if carried is None:
        if isinstance(serde, JsonSerde) and is_model(tp):
            raise TopologyError(f"{where}: JsonSerde cannot carry {tp.__name__} records; use value_type={tp.__name__}")
        return
    if not issubclass(tp, carried):
        raise TopologyError(f"{where}: {serde!r} carries {carried.__name__}, but the declared type is {tp.__name__}")


# ---- what a function is known to return ----------------------------------------------------------------------

_ITERABLES = (
    list,
    tuple,
    set,
    frozenset,
    collections.abc.Iterable,
    collections.abc.Iterator,
    collections.abc.Sequence,
    collections.abc.Collection,
    collections.abc.Generator,
)


def result_type(fn: object) -> Any:
    """What `fn(value)` returns, when it says so: a Record field's type, or a return annotation; else None.

    `Optional[T]` counts as T: every serde passes None through. A lambda says nothing, so this is None.
    """
    if isinstance(fn, FieldDescriptor):
        return _strip_none(fn.type)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # builtins, callables with unresolvable annotations: no type known
        return None
    return _strip_none(hints["return"]) if "return" in hints else None


def element_type(tp: Any) -> Any:
    """The item type of an iterable type (`list[str]` -> str), or None when it is not known."""
    if typing.get_origin(tp) in _ITERABLES:
        args = typing.get_args(tp)
        if args and (len(args) == 1 or typing.get_origin(tp) is not tuple or args[1] is Ellipsis):
            return _strip_none(args[0])
    return None


def _strip_none(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        rest = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return tp
