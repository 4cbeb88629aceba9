"""`Record`: typed values for topics and tables, Faust's `faust.Record` in a small, safe form.

    class PageView(Record):
        user: str
        page: str
        duration_ms: int = 0
        referrer: str | None = None

Fields are the class annotations, in order; a field with a default is optional, one without is required (as in
Faust: `Optional[...]` alone does not make a field optional, a default does). A `datetime` field travels as ISO
8601 text, as in Faust. Instances are built with
keywords or positionally, compare by value, and serialize as a plain JSON object.

Why not pickle, and why validate: values come from Kafka, where anyone may have written anything. Decoding
(`Record.from_data`, `loads`) checks every field against its annotation and raises `ValidationError`
naming the model, the field and what was wrong, so a malformed record reaches the deserialization
exception handler instead of crashing an agent later. Unknown keys are ignored (Faust's non-strict
decoding, so Faust's `__faust` metadata key is harmless). Building an instance in code does not validate, as
in Faust; the serde checks the instance's type when it is sent.

`PageView.user` is a `FieldDescriptor`: `group_by(PageView.user, ...)` re-keys by that field, and its
declared type picks the repartition topic's key serde.
"""

from __future__ import annotations

import datetime
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar

from streamlet.errors import SerializationError

__all__ = ["FieldDescriptor", "Record", "ValidationError"]

_MISSING: Any = object()
_SCALARS: tuple[type, ...] = (str, int, float, bool)


class ValidationError(SerializationError):
    """Data did not match a model: names the model, the field (a dotted path) and the reason."""

    def __init__(self, model: type, field: str | None, reason: str) -> None:
        where = f"field {field!r}" if field else "the value"
        super().__init__(f"{model.__name__}: {where} {reason}")
        self.model = model
        self.field = field
        self.reason = reason


class FieldDescriptor:
    """One field of a Record class: `Model.field` on the class; the value on an instance.

    Calling it on a record returns that record's field, so it can be passed wherever a key function is
    expected (`stream.group_by(PageView.user, name="by-user")`).
    """

    __slots__ = ("name", "type", "model", "default")

    def __init__(self, name: str, type_: Any, model: type, default: Any) -> None:
        self.name = name
        self.type = type_
        self.model = model
        self.default = default

    @property
    def required(self) -> bool:
        return self.default is _MISSING

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return obj.__dict__[self.name]  # only reached while an instance lacks the attribute: never after __init__

    def __call__(self, record: Any) -> Any:
        return getattr(record, self.name)

    def __repr__(self) -> str:
        default = "" if self.required else f" = {self.default!r}"
        return f"<FieldDescriptor: {self.model.__name__}.{self.name}: {_type_label(self.type)}{default}>"


def _type_label(tp: Any) -> str:
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")


@typing.dataclass_transform(eq_default=True, field_specifiers=())
class Record:
    """Base class of typed records; subclass it and annotate the fields (see the module docstring).

    Marked as a dataclass transform (PEP 681), so type checkers know each subclass's constructor.
    """

    _fields: ClassVar[dict[str, FieldDescriptor]] = {}

    def __init_subclass__(cls, serializer: str = "json", **kwargs: Any) -> None:
        # Faust's `class Point(faust.Record, serializer="json")` is accepted; JSON is the one codec here
        if serializer != "json":
            raise TypeError(f"{cls.__name__}: serializer={serializer!r} is not supported; Records are JSON")
        super().__init_subclass__(**kwargs)
        try:
            hints = typing.get_type_hints(cls)
        except NameError as exc:  # e.g. a type defined inside a function, under `from __future__ import annotations`
            raise TypeError(
                f"{cls.__name__}: cannot resolve its field annotations ({exc}); define the types they name at "
                "module level"
            ) from exc
        fields: dict[str, FieldDescriptor] = {}
        for klass in reversed(cls.__mro__):  # base-class fields first, as dataclasses order them
            for name in klass.__dict__.get("__annotations__", {}):
                if name.startswith("_") or typing.get_origin(hints[name]) is ClassVar:
                    continue
                default = _default_of(cls, name)
                _check_supported(cls, name, hints[name])
                if isinstance(default, list | dict | set):
                    raise TypeError(f"{cls.__name__}.{name}: a mutable default ({default!r}) would be shared")
                fields[name] = FieldDescriptor(name, hints[name], cls, default)
        for name, descriptor in fields.items():
            setattr(cls, name, descriptor)
        cls._fields = fields

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        fields = self._fields
        if len(args) > len(fields):
            raise TypeError(f"{type(self).__name__} takes {len(fields)} fields, got {len(args)} positional values")
        values = dict(zip(fields, args, strict=False))
        for name, value in kwargs.items():
            if name not in fields:
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            if name in values:
                raise TypeError(f"{type(self).__name__}: field {name!r} given twice")
            values[name] = value
        for name, descriptor in fields.items():
            if name not in values:
                if descriptor.required:
                    raise TypeError(f"{type(self).__name__}: missing required field {name!r}")
                values[name] = descriptor.default
        self.__dict__.update(values)

    # ---- plain data and JSON ---------------------------------------------------------------------------

    def asdict(self) -> dict[str, Any]:
        """The fields as a dict of JSON-compatible values (nested records become dicts)."""
        return {name: _to_data(self.__dict__[name]) for name in self._fields}

    def dumps(self) -> bytes:
        """Compact UTF-8 JSON."""
        return json.dumps(self.asdict(), separators=(",", ":"), ensure_ascii=False).encode()

    @classmethod
    def from_data(cls, data: Any) -> typing.Self:
        """A validated instance from decoded JSON (a mapping); raises ValidationError. Unknown keys are ignored."""
        return cls(**_validate_record(cls, data, ""))

    @classmethod
    def loads(cls, data: bytes | str) -> typing.Self:
        """A validated instance from JSON text; raises ValidationError for bad JSON or bad fields."""
        try:
            decoded = json.loads(data)
        except (ValueError, TypeError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
            raise ValidationError(cls, None, f"is not JSON: {exc}") from exc
        return cls.from_data(decoded)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, like a dataclass

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={self.__dict__[name]!r}" for name in self._fields)
        return f"{type(self).__name__}({fields})"


def _default_of(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            value = klass.__dict__[name]
            return value.default if isinstance(value, FieldDescriptor) else value
    return _MISSING


def _to_data(value: Any) -> Any:
    if isinstance(value, Record):
        return value.asdict()
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [_to_data(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_data(v) for k, v in value.items()}
    return value


# ---- types: what a field may be declared as, and checking decoded data against it -----------------------------


def _check_supported(cls: type, name: str, tp: Any) -> None:
    """Refuse at class definition a field JSON cannot carry, rather than at the first record."""
    if tp is Any or tp is type(None) or tp in _SCALARS or tp is datetime.datetime:
        return
    if isinstance(tp, type) and issubclass(tp, Record):
        return
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType, list, tuple) or (origin is dict and args[:1] in ((str,), ())):
        for arg in args:
            if arg is not Ellipsis:
                _check_supported(cls, name, arg)
        return
    if tp in (list, dict, tuple):
        return
    raise TypeError(
        f"{cls.__name__}.{name}: type {_type_label(tp)} cannot be carried in JSON; use str, int, float, bool, "
        "datetime, a Record, list[...], tuple[..., ...], dict[str, ...], Any, or an Optional/union of these"
    )


def _validate_record(model: type[Record], data: Any, path: str) -> dict[str, Any]:
    if not isinstance(data, Mapping):
        raise ValidationError(model, path or None, f"must be a JSON object, got {_json_kind(data)}")
    values: dict[str, Any] = {}
    for name, descriptor in model._fields.items():
        where = f"{path}.{name}" if path else name
        if name in data:
            values[name] = _validate(model, descriptor.type, data[name], where)
        elif descriptor.required:
            raise ValidationError(model, where, "is required but missing")
    return values


def _validate(model: type[Record], tp: Any, value: Any, path: str) -> Any:
    """`value` as type `tp` (ints widen to float, arrays become tuples, objects become records), or raise."""
    if tp is Any:
        return value
    if tp is type(None):
        if value is None:
            return None
        raise _mismatch(model, path, tp, value)
    if isinstance(tp, type) and issubclass(tp, Record):
        return tp(**_validate_record(tp, value, path)) if isinstance(value, Mapping) else _fail(model, path, tp, value)
    if tp is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _mismatch(model, path, tp, value)
    if tp is datetime.datetime:  # ISO 8601 text, as Faust writes datetimes
        if isinstance(value, str):
            try:
                return datetime.datetime.fromisoformat(value)
            except ValueError:
                pass
        raise ValidationError(model, path, f"must be an ISO 8601 datetime, got {_json_kind(value)} {_short(value)}")
    if tp in _SCALARS:
        if type(value) is tp:  # bool is not an int here, nor an int a bool
            return value
        raise _mismatch(model, path, tp, value)
    origin, args = typing.get_origin(tp) or tp, typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        for option in args:
            try:
                return _validate(model, option, value, path)
            except ValidationError:
                continue
        raise _mismatch(model, path, tp, value)
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise _mismatch(model, path, tp, value)
        if origin is list:
            item = args[0] if args else Any
            return [_validate(model, item, v, f"{path}[{i}]") for i, v in enumerate(value)]
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_validate(model, args[0], v, f"{path}[{i}]") for i, v in enumerate(value))
        if args and len(args) != len(value):
            raise ValidationError(model, path, f"must have {len(args)} items, got {len(value)}")
        return tuple(_validate(model, args[i] if args else Any, v, f"{path}[{i}]") for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise _mismatch(model, path, tp, value)
        item = args[1] if args else Any
        return {k: _validate(model, item, v, f"{path}.{k}") for k, v in value.items()}
    raise _mismatch(model, path, tp, value)


def _fail(model: type, path: str, tp: Any, value: Any) -> Any:
    raise _mismatch(model, path, tp, value)


def _mismatch(model: type, path: str, tp: Any, value: Any) -> ValidationError:
    return ValidationError(model, path, f"must be {_type_label(tp)}, got {_json_kind(value)} {_short(value)}")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
