"""AgentStream: serdes follow the data; a repartition topic is written with what the data is.

Each test builds an App, runs one record through the first sub-topology on a fake task context, and checks
the bytes written to the repartition topic, decoded independently (json / UTF-8 / struct), or the build error.
"""

from __future__ import annotations

import json
import struct

import pytest

from streamlet import App
from streamlet.errors import TopologyError
from streamlet.models import Record
from streamlet.task_id import TaskId
from tests.unit.runtime._support import FakeContext, graph_of


class PageView(Record):
    user: str
    page: str
    duration_ms: int = 0


class Account(Record):
    id: int
    owner: str


def _first_sent(app: App, topic: str, value: bytes, key: bytes | None = None) -> tuple[bytes | None, bytes | None]:
    ctx = FakeContext(TaskId(0, 0), application_id=app.application_id)
    graph_of(app.topology(), TaskId(0, 0), ctx).process(topic, 0, 0, 0, key, value)
    assert len(ctx.sent) == 1
    return ctx.sent[0].key, ctx.sent[0].value


def test_the_issue_json_values_mapped_by_a_lambda_are_written_as_json() -> None:
    # The report: values mapped without a declared serde were written with StringSerde and the worker died.
    app = App("pv-app")

    @app.agent(app.topic("page-views", value_serde="json"))
    async def by_user(stream):
        async for _ in stream.map_values(lambda v: {"u": v["user"], "n": 1}).group_by(lambda v: v["u"], name="by-user"):
            pass

    key, value = _first_sent(app, "page-views", b'{"user":"ann"}')
    assert key == b"ann"
    assert json.loads(value or b"") == {"u": "ann", "n": 1}


def test_record_values_and_a_field_key_pick_model_and_field_serdes() -> None:
    app = App("pv-app")

    @app.agent(app.topic("page-views", value_type=PageView))
    async def by_user(stream):
        async for _ in stream.group_by(PageView.user, name="by-user"):
            pass

    key, value = _first_sent(app, "page-views", b'{"user":"ann","page":"/a"}')
    assert key == b"ann"
    assert json.loads(value or b"") == {"user": "ann", "page": "/a", "duration_ms": 0}


def test_an_int_field_key_is_written_as_int64() -> None:
    app = App("acc-app")

    @app.agent(app.topic("accounts", value_type=Account))
    async def by_id(stream):
        async for _ in stream.group_by(Account.id, name="by-id"):
            pass

    key, _ = _first_sent(app, "accounts", b'{"id":7,"owner":"ann"}')
    assert key is not None and struct.unpack(">q", key)[0] == 7


def test_annotated_functions_declare_the_new_types() -> None:
    def duration(view: PageView) -> int:
        return view.duration_ms

    def user_of(ms: int) -> str:
        return f"user-{ms}"

    app = App("pv-app")

    @app.agent(app.topic("page-views", value_type=PageView))
    async def durations(stream):
        async for _ in stream.map_values(duration).group_by(user_of, name="by-ms"):
            pass

    key, value = _first_sent(app, "page-views", b'{"user":"ann","page":"/a","duration_ms":42}')
    assert key == b"user-42"
    assert value is not None and struct.unpack(">q", value)[0] == 42


def test_an_undeclared_key_inherits_the_streams_declared_key_serde() -> None:
    app = App("pv-app")

    @app.agent(app.topic("page-views", key_serde="int64", value_serde="json"))
    async def rekey(stream):
        async for _ in stream.group_by(lambda v: v["id"], name="by-id"):
            pass

    key, _ = _first_sent(app, "page-views", b'{"id":5}', key=struct.pack(">q", 1))
    assert key is not None and struct.unpack(">q", key)[0] == 5


def test_undeclared_values_of_a_topic_without_serde_stay_bytes() -> None:
    app = App("raw-app")

    @app.agent(app.topic("raw"))
    async def rekey(stream):
        async for _ in stream.group_by(lambda v: v[:1].decode(), name="by-first"):
            pass

    assert _first_sent(app, "raw", b"\xffxyz"[1:]) == (b"x", b"xyz")


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda app: app.topic("t", value_type=PageView, value_serde="str"), "StringSerde.. carries str"),
        (lambda app: app.topic("t", key_type=int, key_serde="str"), "declared type is int"),
        (lambda app: app.Table("t", value_type=PageView, value_serde="json"), "JsonSerde cannot carry PageView"),
    ],
)
def test_declared_types_and_serdes_that_do_not_fit_fail_at_declaration(declare, message) -> None:
    with pytest.raises(TopologyError, match=message):
        declare(App("x"))


def test_group_by_key_serde_that_cannot_carry_the_field_fails_at_build() -> None:
    app = App("acc-app")

    @app.agent(app.topic("accounts", value_type=Account))
    async def by_id(stream):
        async for _ in stream.group_by(Account.id, name="by-id", key_serde="str"):
            pass

    with pytest.raises(TopologyError, match="agent by_id: group_by 'by-id' key_serde: StringSerde.. carries str"):
        app.topology()


def test_group_by_a_field_of_another_model_fails_at_build() -> None:
    app = App("pv-app")

    @app.agent(app.topic("accounts", value_type=Account))
    async def wrong(stream):
        async for _ in stream.group_by(PageView.user, name="by-user"):
            pass

    with pytest.raises(TopologyError, match="PageView.user is a field of PageView, but the stream carries Account"):
        app.topology()


def test_a_table_default_its_value_serde_cannot_write_fails_at_build() -> None:
    app = App("t-app")
    app.Table("counts", value_serde="str", default=int)
    with pytest.raises(TopologyError, match="table counts: default.. returns a int, but value_serde"):
        app.topology()


def test_a_table_default_that_fits_builds() -> None:
    app = App("t-app")
    app.Table("counts", value_serde="int64", default=int)
    app.Table("lists", default=list)  # JSON values
    app.topology()


def test_sending_the_wrong_type_names_topic_serde_and_type_at_runtime() -> None:
    app = App("pv-app")
    out = app.topic("out", value_type=PageView)

    @app.agent(app.topic("in", value_serde="json"))
    async def forward(stream):
        async for value in stream:
            await out.send(value=value)

    ctx = FakeContext(TaskId(0, 0), application_id="pv-app")
    graph = graph_of(app.topology(), TaskId(0, 0), ctx)
    with pytest.raises(Exception, match=r"ModelSerde\(PageView\) cannot serialize a dict for topic 'out'"):
        graph.process("in", 0, 0, 0, None, b'{"user":"ann"}')


def test_a_malformed_record_fails_deserialization_naming_model_field_topic_and_offset() -> None:
    from streamlet.runtime.task_context import RecordDeserializationError

    app = App("pv-app")

    @app.agent(app.topic("page-views", value_type=PageView))
    async def count(stream):
        async for _ in stream:
            pass

    graph = graph_of(app.topology(), TaskId(0, 0), FakeContext(TaskId(0, 0), application_id="pv-app"))
    with pytest.raises(RecordDeserializationError) as info:
        graph.process("page-views", 0, 17, 0, None, b'{"user":3,"page":"/"}')
    assert (info.value.topic, info.value.partition, info.value.offset) == ("page-views", 0, 17)
    assert "cannot decode a PageView from topic 'page-views': PageView: field 'user' must be str" in str(info.value)


def test_map_values_serde_that_cannot_carry_the_annotated_type_fails_at_build() -> None:
    def summary(view: PageView) -> dict[str, int]:
        return {"ms": view.duration_ms}

    app = App("pv-app")

    @app.agent(app.topic("page-views", value_type=PageView))
    async def summarise(stream):
        async for _ in stream.map_values(summary, value_serde="str"):
            pass

    with pytest.raises(TopologyError, match="agent summarise: map_values value_serde: StringSerde.. carries str"):
        app.topology()


def test_group_by_a_field_without_a_name_is_named_as_in_faust() -> None:
    app = App("pv-app")

    @app.agent(app.topic("page-views", value_type=PageView))
    async def by_user(stream):
        async for _ in stream.group_by(PageView.user):
            pass

    ctx = FakeContext(TaskId(0, 0), application_id="pv-app")
    graph_of(app.topology(), TaskId(0, 0), ctx).process("page-views", 0, 0, 0, None, b'{"user":"ann","page":"/"}')
    assert [(s.topic, s.key) for s in ctx.sent] == [("pv-app-page-views-PageView.user-repartition", b"ann")]


def test_group_by_a_function_without_a_name_is_an_error() -> None:
    app = App("pv-app")

    @app.agent(app.topic("page-views", value_serde="json"))
    async def by_user(stream):
        async for _ in stream.group_by(lambda v: v["user"]):
            pass

    with pytest.raises(TopologyError, match="group_by with a function needs name="):
        app.topology()
