"""The worker's web server (aiohttp): interactive queries over HTTP, and Faust-style `@app.page` handlers.

Endpoints (JSON):

* `GET /stores/<store>/<key>`: the key's value (a window or session store's: its windows, `?at=T` those
  holding event time T, `?from=A&to=B` those in a time range, in epoch ms), read here if this client's
  active task owns the key's partition, else forwarded once to the owner's `application_server` (the
  owner answers for itself);
  `?max_standby_lag=N` lets a local standby at most N changelog records behind answer (KIP-535);
* `GET /metadata`, `GET /metadata/<store>`, `GET /metadata/<store>/<key>`: which host runs which tasks,
  which hosts have a store, which host owns a key (Kafka Streams' `metadataForAllStreamsClients`,
  `streamsMetadataForStore`, `queryMetadataForKey`);
* `GET /metrics`: this client's metrics in Prometheus' text format; `GET /status`: the same as the JSON
  event the client appends to `<application_id>-metrics` (`streamlet.runtime.metrics_event`);
* `GET /group` (HTML): the whole group's placement and task states, read from the application's
  assignments and metrics topics as `streamlet status` reads them (`streamlet.group_page`);
* every `@app.page(path)`: `async def handler(web, request, **match_info)`, as in Faust. Tables read in a
  handler read the store partition of the key; a key owned by another worker forwards the whole request
  to that worker. Tables are read-only there.

While the client rebalances, a task restores, or the client is not running, a query answers 503 with a JSON
`reason` and `Retry-After`: a retriable error, never a possibly stale answer. A missing key is 404.

Bound beyond 127.0.0.1, the server serves HTTPS and requires a token (`streamlet.web_security`): a request
without it is 401, and a forwarded request carries it.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
from aiohttp import web
from aiokafka.structs import TopicPartition

from streamlet.errors import StreamletError
from streamlet.faust.agent_context import AgentError, task_context
from streamlet.group_page import render_group_page
from streamlet.runtime.metrics_event import build_metrics_event
from streamlet.runtime.metrics_publisher import ClientMetrics
from streamlet.runtime.prometheus import CONTENT_TYPE, prometheus_text
from streamlet.runtime.queries import (
    KeyNotLocalError,
    KeyQueryMetadata,
    QueryUnavailableError,
    ReadOnlyKeyValueStore,
    StreamsMetadata,
    StreamsMetadataState,
    UnknownStoreError,
)
from streamlet.runtime.window_queries import MAX_TIME, ReadOnlySessionStore, ReadOnlyWindowStore
from streamlet.serdes import BytesSerde, IntegerSerde, JsonSerde, LongSerde, Serde, StringSerde
from streamlet.status import GroupEvents
from streamlet.task_id import TaskId
from streamlet.topology.windows import Windowed
from streamlet.web_security import WebSecurity, client_context, server_context

__all__ = ["FORWARDED_HEADER", "Page", "QueryClient", "Web", "WebServer"]

log = logging.getLogger("streamlet.web")

#: set on a forwarded request (to the forwarding host): a client forwards a request at most once
FORWARDED_HEADER = "X-Streamlet-Forwarded-By"
SERVED_BY_HEADER = "X-Streamlet-Served-By"
GROUP_READ_TIMEOUT_S = 15.0

PageHandler = Callable[..., Awaitable[Any]]
NO_WEB_SECURITY = WebSecurity()  # plain HTTP, no token: the default bind address is 127.0.0.1


@dataclass(frozen=True)
class Page:
    """A Faust-style page: `handler(web, request, **match_info)` for `method` requests to `path`."""

    path: str
    handler: PageHandler
    method: str = "GET"


class QueryClient(Protocol):
    """What the web server needs of a client (`KafkaStreams`)."""

    metadata_state: StreamsMetadataState
    metrics: ClientMetrics | None  # None until the client started

    def store(self, name: str, *, max_standby_lag: int | None = None) -> ReadOnlyKeyValueStore: ...

    async def refresh_standby_lags(self) -> Mapping[TopicPartition, int]: ...


class Web:
    """The `web` argument of a page handler (Faust's): response helpers."""

    def json(self, value: Any, *, status: int = 200) -> web.Response:
        return web.json_response(value, status=status, dumps=_dumps)

    def text(self, value: str, *, status: int = 200, content_type: str = "text/plain") -> web.Response:
        return web.Response(text=value, status=status, content_type=content_type)

    def bytes(self, value: bytes, *, status: int = 200, content_type: str = "application/octet-stream") -> web.Response:
        return web.Response(body=value, status=status, content_type=content_type)

    def error(self, status: int, reason: str) -> web.Response:
        return self.json({"error": reason}, status=status)


class WebServer:
    """One per worker: serves queries and pages on `host:port` (127.0.0.1 by default: not exposed)."""

    def __init__(
        self,
        client: QueryClient,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        pages: Sequence[Page] = (),
        forward_timeout_s: float = 10.0,
        group_events: Callable[[], Awaitable[GroupEvents]] | None = None,
        security: WebSecurity = NO_WEB_SECURITY,
    ) -> None:
        self._client = client
        self._security = security
        self._group_events = group_events
        self._host = host
        self._port = port
        self._forward_timeout = aiohttp.ClientTimeout(total=forward_timeout_s)
        self._web = Web()
        self._app = web.Application(middlewares=[self._authorize, self._errors])
        self._app.router.add_get("/metadata", self._all_metadata)
        self._app.router.add_get("/metadata/{store}", self._store_metadata)
        self._app.router.add_get("/metadata/{store}/{key:.*}", self._key_metadata)
        self._app.router.add_get("/stores/{store}/{key:.*}", self._get_key)  # the empty word is a key too
        self._app.router.add_get("/metrics", self._metrics)
        self._app.router.add_get("/status", self._status)
        if group_events is not None:
            self._app.router.add_get("/group", self._group)
        for page in pages:
            self._app.router.add_route(page.method, page.path, self._page_handler(page))
        self._runner: web.AppRunner | None = None
        self._session: aiohttp.ClientSession | None = None
        self.port = port

    @property
    def local_host(self) -> str:
        return self._client.metadata_state.local_host

    async def start(self) -> None:
        self._runner = web.AppRunner(self._app, access_log=None)
        await self._runner.setup()
        tls = server_context(self._security) if self._security.tls else None
        site = web.TCPSite(self._runner, self._host, self._port, ssl_context=tls)
        await site.start()
        server = site._server  # the bound port, when asked for port 0
        sockets = getattr(server, "sockets", None) or []
        if sockets:
            self.port = sockets[0].getsockname()[1]
        connector = aiohttp.TCPConnector(ssl=client_context(self._security)) if self._security.tls else None
        self._session = aiohttp.ClientSession(timeout=self._forward_timeout, connector=connector)
        log.info(
            "web server listening on %s://%s:%d (application_server %r%s)",
            self._security.scheme,
            self._host,
            self.port,
            self.local_host,
            ", token required" if self._security.token else "",
        )

    async def stop(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ---- endpoints -------------------------------------------------------------------------------------------

    async def _get_key(self, request: web.Request) -> web.StreamResponse:
        name, raw_key = request.match_info["store"], request.match_info["key"]
        lag = request.query.get("max_standby_lag")
        if lag is not None:  # KIP-535: a local standby at most this many records behind may answer
            await self._client.refresh_standby_lags()
        store = self._client.store(name, max_standby_lag=None if lag is None else int(lag))
        key = parse_key(store_key_serde(self._client.metadata_state, name), raw_key)
        raw = store.serialize_key(key)
        body = {
            "store": name,
            "key": key,
            "partition": self._client.metadata_state.partition_for(name, raw),
            "host": self.local_host,
        }
        if isinstance(store, ReadOnlyWindowStore | ReadOnlySessionStore):
            windows = [
                {"start": w.window.start, "end": w.window.end, "value": v}
                for w, v in _windowed_query(store, key, request.query)
            ]
            return self._web.json({**body, "windows": windows}, status=200 if windows else 404)
        value = store.get(key)
        if value is None:
            return self._web.json({**body, "error": "not_found"}, status=404)
        return self._web.json({**body, "value": value})

    async def _all_metadata(self, request: web.Request) -> web.StreamResponse:
        return self._web.json([_metadata_json(m) for m in self._client.metadata_state.all_metadata()])

    async def _store_metadata(self, request: web.Request) -> web.StreamResponse:
        state = self._client.metadata_state
        return self._web.json([_metadata_json(m) for m in state.metadata_for_store(request.match_info["store"])])

    async def _key_metadata(self, request: web.Request) -> web.StreamResponse:
        state = self._client.metadata_state
        name = request.match_info["store"]
        key_serde = store_key_serde(state, name)
        raw = key_serde.serialize(name, parse_key(key_serde, request.match_info["key"]))
        if raw is None:
            raise web.HTTPBadRequest(reason="None is not a valid key")
        return self._web.json(_key_metadata_json(state.key_query_metadata(name, raw)))

    async def _metrics_event(self) -> dict[str, Any] | None:
        metrics = self._client.metrics
        return None if metrics is None else build_metrics_event(await metrics.sample())

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        event = await self._metrics_event()
        if event is None:
            return self._unavailable("not_running", "the client has not started")
        return web.Response(body=prometheus_text(event), headers={"Content-Type": CONTENT_TYPE})

    async def _status(self, request: web.Request) -> web.StreamResponse:
        event = await self._metrics_event()
        if event is None:
            return self._unavailable("not_running", "the client has not started")
        return self._web.json(event)

    async def _group(self, request: web.Request) -> web.StreamResponse:
        assert self._group_events is not None
        try:
            events = await asyncio.wait_for(self._group_events(), GROUP_READ_TIMEOUT_S)
        except TimeoutError:
            return self._unavailable("topics_unreachable", "the assignments and metrics topics did not answer")
        return self._web.text(render_group_page(events), content_type="text/html")

    def _page_handler(self, page: Page) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            token = task_context.set(QueryContext(self._client))  # type: ignore[arg-type]
            try:
                result = await page.handler(self._web, request, **request.match_info)
            finally:
                task_context.reset(token)
            if isinstance(result, web.StreamResponse):
                return result
            return self._web.json(result)

        return handle

    # ---- errors and forwarding --------------------------------------------------------------------------------

    @web.middleware
    async def _authorize(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """With a `web_token`, a request without it is 401 (forwarded requests carry it)."""
        if not self._security.authorized(request.headers.get("Authorization")):
            response = self._web.json(
                {"error": "unauthorized", "message": "this server requires its token"}, status=401
            )
            response.headers["WWW-Authenticate"] = "Bearer"
            return response
        return await handler(request)

    @web.middleware
    async def _errors(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        try:
            response = await handler(request)
        except QueryUnavailableError as exc:
            return self._unavailable(exc.reason, str(exc))
        except KeyNotLocalError as exc:
            return await self._forward(request, exc)
        except UnknownStoreError as exc:
            return self._web.json({"error": "unknown_store", "message": str(exc)}, status=404)
        except (ValueError, StreamletError) as exc:
            return self._web.json({"error": "bad_request", "message": str(exc)}, status=400)
        response.headers.setdefault(SERVED_BY_HEADER, self.local_host)
        return response

    def _unavailable(self, reason: str, message: str) -> web.Response:
        response = self._web.json({"error": "unavailable", "reason": reason, "message": message}, status=503)
        response.headers["Retry-After"] = "1"
        response.headers[SERVED_BY_HEADER] = self.local_host
        return response

    async def _forward(self, request: web.Request, exc: KeyNotLocalError) -> web.StreamResponse:
        """Ask the owner once; a forwarded request that is not local there either is a rebalance (503)."""
        if FORWARDED_HEADER in request.headers or exc.host == self.local_host:
            return self._unavailable("not_owner", f"{exc}; the owner moved (a rebalance), retry")
        if self._session is None:
            return self._unavailable("not_running", "the web server is stopping")
        url = f"{self._security.scheme}://{exc.host}{request.rel_url}"
        headers = {FORWARDED_HEADER: self.local_host or "unknown", **self._security.headers()}
        if request.content_type:
            headers["Content-Type"] = request.content_type
        try:
            async with self._session.request(request.method, url, data=await request.read(), headers=headers) as answer:
                body = await answer.read()
                forwarded = web.Response(status=answer.status, body=body)
                for name in ("Content-Type", "Retry-After", SERVED_BY_HEADER):
                    if name in answer.headers:
                        forwarded.headers[name] = answer.headers[name]
                return forwarded
        except (aiohttp.ClientError, TimeoutError) as error:
            return self._unavailable("owner_unreachable", f"{exc}, which did not answer: {error!r}")


class _ReadOnlyRaw:
    """A store as a table sees it outside an agent: reads route by key; writes are an error."""

    plain_values = True  # values as queries return them (a timestamped store's without their timestamp)

    def __init__(self, view: ReadOnlyKeyValueStore) -> None:
        self._view = view

    def get(self, key: bytes) -> bytes | None:
        return self._view.get_raw(key)

    def all(self) -> Iterator[tuple[bytes, bytes]]:
        return self._view.raw_all()

    def _read_only(self, *args: Any) -> Any:
        raise AgentError(f"store {self._view.name} is read-only outside agents (a web page reads, agents write)")

    put = put_all = delete = _read_only


class QueryContext:
    """The task context a page handler's table reads see: every store, read-only, routed by key."""

    task_id: TaskId | None = None

    def __init__(self, client: QueryClient) -> None:
        self._client = client

    def get_state_store(self, name: str) -> _ReadOnlyRaw:
        return _ReadOnlyRaw(self._client.store(name))

    def local_stores(self, name: str) -> list[_ReadOnlyRaw]:
        """A table's items() in a page: this worker's partitions (as in an agent)."""
        return [self.get_state_store(name)]

    def send(self, *args: Any, **kwargs: Any) -> None:
        raise AgentError("a web page cannot send records; send from an agent")


def _windowed_query(
    store: ReadOnlyWindowStore | ReadOnlySessionStore, key: Any, query: Mapping[str, str]
) -> list[tuple[Windowed, Any]]:
    """A windowed store's answer for `key` and the request's time parameters, in epoch milliseconds.

    Window stores: `?at=T`, the windows holding event time T; `?from=A&to=B`, those starting in [A, B]; neither,
    every live window. Session stores: `?from=A&to=B`, the sessions overlapping [A, B]; none, every session.
    """
    times = {name: _millis(query, name) for name in ("at", "from", "to")}
    if isinstance(store, ReadOnlySessionStore):
        if times["at"] is not None:
            return store.find_sessions(key, times["at"], times["at"])
        return store.find_sessions(key, times["from"] or 0, _or_max(times["to"]))
    if times["at"] is not None:
        if times["from"] is not None or times["to"] is not None:
            raise ValueError("give either at=T or from=A&to=B, not both")
        return store.windows_at(key, times["at"])
    return store.fetch_range(key, times["from"] or 0, _or_max(times["to"]))


def _millis(query: Mapping[str, str], name: str) -> int | None:
    raw = query.get(name)
    if raw is None:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected a time in epoch milliseconds") from None


def _or_max(value: int | None) -> int:
    return MAX_TIME if value is None else value


def store_key_serde(state: StreamsMetadataState, name: str) -> Serde:
    return state.store_serdes(name)[0]


def parse_key(serde: Serde, raw: str) -> Any:
    """A key from a URL, typed for the store's key serde (an int for int serdes, JSON for JSON keys)."""
    if isinstance(serde, StringSerde):
        return raw
    if isinstance(serde, LongSerde | IntegerSerde):
        return int(raw)
    if isinstance(serde, BytesSerde):
        return raw.encode()
    if isinstance(serde, JsonSerde):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    for method in ("asdict", "model_dump"):
        if callable(getattr(value, method, None)):
            return getattr(value, method)()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=str)
    return str(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, default=_default)


def _metadata_json(m: StreamsMetadata) -> dict[str, Any]:
    return {
        "host": m.host,
        "stores": sorted(m.store_names),
        "active_tasks": sorted(str(t) for t in m.active_tasks),
        "standby_stores": sorted(m.standby_store_names),
        "standby_tasks": sorted(str(t) for t in m.standby_tasks),
    }


def _key_metadata_json(m: KeyQueryMetadata) -> dict[str, Any]:
    return {"active_host": m.active_host, "standby_hosts": sorted(m.standby_hosts), "partition": m.partition}
