"""TLS and a bearer token for the worker's web server, once it is bound beyond 127.0.0.1.

Workers forward interactive queries to each other, so a deployment binds the server to an address other
workers reach (`web_host`), and then anyone on that network reaches it too. With `web_ssl_certfile` and
`web_ssl_keyfile` it serves HTTPS; with `web_token` every request needs `Authorization: Bearer <token>` (else
401), and a forwarded query carries the token (and checks the owner's certificate against `web_ssl_cafile`).
"""

from __future__ import annotations

import functools
import hmac
import ssl
from dataclasses import dataclass
from pathlib import Path

from streamlet.errors import ConfigError
from streamlet.kafka.security import Password

#: The web server's settings (StreamsConfig fields), each with its default
WEB_SECURITY_DEFAULTS = {
    "web_ssl_certfile": "",
    "web_ssl_keyfile": "",
    "web_ssl_cafile": "",
    "web_token": "",
    "web_token_file": "",
}


@dataclass(frozen=True)
class WebSecurity:
    """How the web server is reached: TLS files, and the token every request carries."""

    ssl_certfile: str = ""
    ssl_keyfile: str = ""
    ssl_cafile: str = ""  # the CA of the other workers' certificates (forwarding); empty: the system's
    token: Password = Password("")

    def __post_init__(self) -> None:
        for name in ("ssl_certfile", "ssl_keyfile", "ssl_cafile"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(f"web_{name}={path!r}: no such file")
        if bool(self.ssl_certfile) != bool(self.ssl_keyfile):
            raise ConfigError("web_ssl_certfile and web_ssl_keyfile go together (the server's certificate and key)")
        if self.tls:
            server_context(self)  # a bad certificate or key fails when the config is built

    @property
    def tls(self) -> bool:
        return bool(self.ssl_certfile)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    def authorized(self, header: str | None) -> bool:
        """Whether an `Authorization` header carries the token (always, when no token is set)."""
        if not self.token:
            return True
        expected = f"Bearer {self.token.reveal()}"
        return header is not None and hmac.compare_digest(header.encode(), expected.encode())

    def headers(self) -> dict[str, str]:
        """What a forwarded request adds: the token."""
        return {"Authorization": f"Bearer {self.token.reveal()}"} if self.token else {}


@functools.lru_cache(maxsize=4)
def server_context(security: WebSecurity) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(security.ssl_certfile, security.ssl_keyfile, password=lambda: "")
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(
            f"web_ssl_certfile={security.ssl_certfile!r}, web_ssl_keyfile={security.ssl_keyfile!r}: cannot load "
            f"them ({exc})"
        ) from None
    return context


@functools.lru_cache(maxsize=4)
def client_context(security: WebSecurity) -> ssl.SSLContext:
    """Checks another worker's certificate (and name: `application_server` must be a name it holds)."""
    try:
        return ssl.create_default_context(cafile=security.ssl_cafile or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"web_ssl_cafile={security.ssl_cafile!r}: not a PEM file of CAs ({exc})") from None
