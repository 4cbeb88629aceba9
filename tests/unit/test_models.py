"""Record: fields, defaults, JSON, and validation of decoded data (Faust's faust.Record semantics where they apply)."""

from __future__ import annotations

import datetime
import json
from typing import Any, ClassVar, Optional

import pytest

from streamlet.models import FieldDescriptor, Record, ValidationError


class Point(Record):
    x: int
    y: int


class PageView(Record):
    user: str
    page: str
    duration_ms: int = 0
    referrer: str | None = None
    score: float = 0.0


class Session(Record):
    views: list[PageView]
    origin: Point | None = None
    tags: dict[str, int] = None  # type: ignore[assignment]  # a None default, not a shared mutable one


class Required(Record):
    maybe: Optional[str]  # noqa: UP045  # Optional without a default is still required, as in Faust


class Child(PageView):
    device: str = "web"


def test_fields_keep_declaration_order_and_defaults() -> None:
    assert list(PageView._fields) == ["user", "page", "duration_ms", "referrer", "score"]
    assert [f.required for f in PageView._fields.values()] == [True, True, False, False, False]
    assert list(Child._fields) == ["user", "page", "duration_ms", "referrer", "score", "device"]


def test_class_attribute_is_a_field_descriptor_that_reads_the_field() -> None:
    assert isinstance(PageView.user, FieldDescriptor)
    assert PageView.user.type is str and PageView.user.model is PageView
    view = PageView("ann", "/home")
    assert PageView.user(view) == "ann"
    assert view.user == "ann" and view.duration_ms == 0 and view.referrer is None


def test_construction_by_position_or_keyword_and_equality() -> None:
    assert PageView("ann", "/a", 5) == PageView(user="ann", page="/a", duration_ms=5)
    assert PageView("ann", "/a") != PageView("bob", "/a")
    with pytest.raises(TypeError, match="missing required field 'page'"):
        PageView(user="ann")
    with pytest.raises(TypeError, match="no field 'colour'"):
        PageView("ann", "/a", colour="red")
    with pytest.raises(TypeError, match="given twice"):
        PageView("ann", user="bob")


def test_json_round_trip_with_nested_records() -> None:
    session = Session([PageView("ann", "/a", 3)], origin=Point(1, 2), tags={"k": 1})
    data = session.dumps()
    assert json.loads(data) == {
        "views": [{"user": "ann", "page": "/a", "duration_ms": 3, "referrer": None, "score": 0.0}],
        "origin": {"x": 1, "y": 2},
        "tags": {"k": 1},
    }
    assert Session.loads(data) == session


def test_decoding_fills_defaults_and_ignores_unknown_keys() -> None:
    # Faust decodes non-strictly, and writes a "__faust" metadata key: both must be harmless.
    view = PageView.loads(b'{"user":"ann","page":"/a","extra":1,"__faust":{"ns":"x.PageView"}}')
    assert view == PageView("ann", "/a")


def test_ints_widen_to_float_but_bools_are_not_ints() -> None:
    assert PageView.loads(b'{"user":"a","page":"/","score":3}').score == 3.0
    with pytest.raises(ValidationError, match="'duration_ms' must be int, got boolean True"):
        PageView.loads(b'{"user":"a","page":"/","duration_ms":true}')


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"page":"/"}', "PageView: field 'user' is required but missing"),
        (b'{"user":1,"page":"/"}', "PageView: field 'user' must be str, got integer 1"),
        (b'{"user":"a","page":"/","referrer":5}', "field 'referrer' must be str | None, got integer 5"),
        (b"[1,2]", "PageView: the value must be a JSON object, got array"),
        (b"not json", "PageView: the value is not JSON"),
        (b"\xff\xfe", "PageView: the value is not JSON"),
    ],
)
def test_validation_errors_name_model_field_and_reason(data: bytes, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("|", r"\|").replace("[", r"\[")):
        PageView.loads(data)


def test_nested_errors_carry_the_path() -> None:
    with pytest.raises(ValidationError, match=r"field 'views\[1\].page' is required"):
        Session.loads(b'{"views":[{"user":"a","page":"/"},{"user":"b"}]}')


def test_optional_without_default_is_required() -> None:
    with pytest.raises(ValidationError, match="'maybe' is required"):
        Required.loads(b"{}")
    assert Required.loads(b'{"maybe":null}').maybe is None


def test_unsupported_field_types_and_mutable_defaults_fail_at_class_definition() -> None:
    with pytest.raises(TypeError, match="cannot be carried in JSON"):

        class _Bad(Record):
            when: set[int]

    with pytest.raises(TypeError, match="mutable default"):

        class _Shared(Record):
            items: list[int] = []  # noqa: RUF012


def test_any_field_takes_any_json() -> None:
    class Loose(Record):
        payload: Any

    assert Loose.loads(b'{"payload":[1,{"a":null}]}').payload == [1, {"a": None}]


def test_unresolvable_annotations_are_a_clear_error() -> None:
    with pytest.raises(TypeError, match="Broken: cannot resolve its field annotations"):

        class Broken(Record):
            thing: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821


def test_class_variables_and_private_names_are_not_fields() -> None:
    class Tagged(Record):
        kind: ClassVar[str] = "tagged"
        _cache: int = 0
        value: int

    assert list(Tagged._fields) == ["value"]
    assert Tagged(1).asdict() == {"value": 1} and Tagged.kind == "tagged"


class Event(Record, serializer="json"):  # Faust's spelling of the class options
    at: datetime.datetime
    seen: datetime.datetime | None = None


def test_datetimes_travel_as_iso_8601() -> None:
    at = datetime.datetime(2026, 11, 23, 18, 30, 5, 250000, tzinfo=datetime.UTC)
    data = Event(at).dumps()
    assert json.loads(data) == {"at": "2026-11-23T18:30:05.250000+00:00", "seen": None}
    assert Event.loads(data) == Event(at)
    with pytest.raises(ValidationError, match="'at' must be an ISO 8601 datetime, got string 'yesterday'"):
        Event.loads(b'{"at":"yesterday"}')
    with pytest.raises(ValidationError, match="'at' must be an ISO 8601 datetime, got integer 5"):
        Event.loads(b'{"at":5}')


def test_other_serializers_are_refused() -> None:
    with pytest.raises(TypeError, match="serializer='pickle' is not supported"):

        class _Pickled(Record, serializer="pickle"):
            x: int
