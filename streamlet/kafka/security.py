"""How streamlet's Kafka clients authenticate and encrypt: TLS, SASL and the secrets they need.

The settings carry Kafka's client config names in snake_case (`security.protocol` -> `security_protocol`), so a
user copies them from a cluster's connection page. `ClientSecurity` checks them once, turns them into the keyword
arguments every aiokafka client takes, and builds the TLS context once per process: every consumer, producer and
admin client of a worker then shares it. Passwords are held in `Password`, whose repr and str never show the
value, so a config printed in a log line or a traceback leaks nothing.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import ssl
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeAlias

from aiokafka.abc import AbstractTokenProvider

from streamlet.errors import ConfigError

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
# Kafka's ssl.endpoint.identification.algorithm: "https" checks the broker's name against its certificate;
# "" turns that check off (the certificate must still be signed by a trusted CA)
ENDPOINT_IDENTIFICATION = ("https", "")
#: Settings holding a secret: never taken from the command line, never shown.
SECRET_SETTINGS = ("ssl_password", "sasl_plain_password")
#: Every security setting StreamsConfig has, each with its default. `<secret>_file` reads a secret from a file.
SECURITY_DEFAULTS: Mapping[str, Any] = {
    "security_protocol": "PLAINTEXT",
    "ssl_cafile": "",
    "ssl_certfile": "",
    "ssl_keyfile": "",
    "ssl_password": "",
    "ssl_password_file": "",
    "ssl_endpoint_identification_algorithm": "https",
    "sasl_mechanism": "PLAIN",
    "sasl_plain_username": "",
    "sasl_plain_password": "",
    "sasl_plain_password_file": "",
    "sasl_oauth_token_provider": None,
}
TokenProviderLike: TypeAlias = AbstractTokenProvider | Callable[[], str | Awaitable[str]] | str | None


class Password:
    """A secret (Kafka's `Password` type): `reveal()` gives the value; repr, str and format show `[hidden]`."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Password([hidden])"

    __str__ = __repr__

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Password) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


def as_password(value: Password | str | None) -> Password:
    return value if isinstance(value, Password) else Password(value or "")


def read_secret_file(setting: str, path: str) -> Password:
    """The secret in `path` (one trailing newline dropped, as `echo` writes it), or an error naming the file."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{setting}_file={path!r}: cannot read it ({exc.strerror or exc})") from None
    return Password(text[:-1] if text.endswith("\n") else text)


class CallableTokenProvider(AbstractTokenProvider):
    """OAUTHBEARER's token hook as a plain function (sync or async) returning the current access token."""

    def __init__(self, fn: Callable[[], str | Awaitable[str]]) -> None:
        self._fn = fn

    async def token(self) -> str:
        value = self._fn()
        if inspect.isawaitable(value):
            value = await value
        return str(value)


def resolve_token_provider(value: TokenProviderLike) -> AbstractTokenProvider | None:
    """An aiokafka token provider from an instance, a function, or a "module:attribute" naming either."""
    if value is None or isinstance(value, AbstractTokenProvider):
        return value
    if isinstance(value, str):
        module, _, attribute = value.partition(":")
        try:
            value = getattr(importlib.import_module(module), attribute)
        except (ImportError, AttributeError, ValueError) as exc:
            raise ConfigError(f"sasl_oauth_token_provider={value!r}: cannot import it ({exc})") from None
        return resolve_token_provider(value)
    if isinstance(value, type) and issubclass(value, AbstractTokenProvider):
        return value()
    if callable(value):
        return CallableTokenProvider(value)
    raise ConfigError(f"sasl_oauth_token_provider must be a token provider or a function, got {value!r}")


def _one_of(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{name}={value!r}: expected one of {', '.join(repr(a) for a in allowed)}")


@dataclass(frozen=True)
class ClientSecurity:
    """The security settings of every client of one application, checked when built."""

    security_protocol: str = "PLAINTEXT"
    ssl_cafile: str = ""
    ssl_certfile: str = ""
    ssl_keyfile: str = ""
    ssl_password: Password = Password("")
    ssl_endpoint_identification_algorithm: str = "https"
    sasl_mechanism: str = "PLAIN"
    sasl_plain_username: str = ""
    sasl_plain_password: Password = Password("")
    sasl_oauth_token_provider: AbstractTokenProvider | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> ClientSecurity:
        """From StreamsConfig-style settings (any subset of `SECURITY_DEFAULTS`); `*_file` secrets are read here."""
        values = {**SECURITY_DEFAULTS, **settings}
        secrets: dict[str, Password] = {}
        for name in SECRET_SETTINGS:
            secret = as_password(values[name])
            path = values[f"{name}_file"]
            if path and secret:
                raise ConfigError(f"give {name} or {name}_file, not both")
            secrets[name] = read_secret_file(name, path) if path else secret
        return cls(
            security_protocol=str(values["security_protocol"]).upper(),
            ssl_cafile=values["ssl_cafile"],
            ssl_certfile=values["ssl_certfile"],
            ssl_keyfile=values["ssl_keyfile"],
            ssl_password=secrets["ssl_password"],
            ssl_endpoint_identification_algorithm=str(values["ssl_endpoint_identification_algorithm"]).lower(),
            sasl_mechanism=str(values["sasl_mechanism"]).upper(),
            sasl_plain_username=values["sasl_plain_username"],
            sasl_plain_password=secrets["sasl_plain_password"],
            sasl_oauth_token_provider=resolve_token_provider(values["sasl_oauth_token_provider"]),
        )

    def __post_init__(self) -> None:
        _one_of("security_protocol", self.security_protocol, SECURITY_PROTOCOLS)
        _one_of(
            "ssl_endpoint_identification_algorithm", self.ssl_endpoint_identification_algorithm, ENDPOINT_IDENTIFICATION
        )
        if self.uses_sasl:
            _one_of("sasl_mechanism", self.sasl_mechanism, SASL_MECHANISMS)
            if self.sasl_mechanism == "OAUTHBEARER":
                if self.sasl_oauth_token_provider is None:
                    raise ConfigError("sasl_mechanism=OAUTHBEARER needs sasl_oauth_token_provider (the token hook)")
            elif not self.sasl_plain_username or not self.sasl_plain_password:
                raise ConfigError(
                    f"sasl_mechanism={self.sasl_mechanism} needs sasl_plain_username and sasl_plain_password "
                    "(the password from $STREAMLET_SASL_PLAIN_PASSWORD or sasl_plain_password_file)"
                )
        if self.uses_tls:
            for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile"):
                path = getattr(self, name)
                if path and not Path(path).is_file():
                    raise ConfigError(f"{name}={path!r}: no such file")
            if self.ssl_keyfile and not self.ssl_certfile:
                raise ConfigError("ssl_keyfile needs ssl_certfile (the client certificate it belongs to)")
            ssl_context(self)  # a bad file or key password fails here, when the config is built

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    def describe(self) -> str:
        """For error messages: how clients connect, without a secret ("SASL_SSL, SCRAM-SHA-512 as user 'app'")."""
        if not self.uses_sasl:
            return self.security_protocol + (" with a client certificate" if self.ssl_certfile else "")
        who = "a token" if self.sasl_mechanism == "OAUTHBEARER" else f"user {self.sasl_plain_username!r}"
        return f"{self.security_protocol}, {self.sasl_mechanism} as {who}"

    def client_kwargs(self) -> dict[str, Any]:
        """The keyword arguments that give an aiokafka client (consumer, producer, admin, client) these settings."""
        kwargs: dict[str, Any] = {"security_protocol": self.security_protocol}
        if self.uses_tls:
            kwargs["ssl_context"] = ssl_context(self)
        if self.uses_sasl:
            kwargs["sasl_mechanism"] = self.sasl_mechanism
            if self.sasl_mechanism == "OAUTHBEARER":
                kwargs["sasl_oauth_token_provider"] = self.sasl_oauth_token_provider
            else:
                kwargs["sasl_plain_username"] = self.sasl_plain_username
                kwargs["sasl_plain_password"] = self.sasl_plain_password.reveal()
        return kwargs


PLAINTEXT = ClientSecurity()


@functools.lru_cache(maxsize=8)
def ssl_context(security: ClientSecurity) -> ssl.SSLContext:
    """One TLS context per distinct settings, shared by every client (loading a CA bundle is not free).

    Built with the ssl module rather than aiokafka's helper, which cannot turn hostname checks off.
    """
    try:
        context = ssl.create_default_context(cafile=security.ssl_cafile or None)
    except (OSError, ssl.SSLError) as exc:
        raise ConfigError(f"ssl_cafile={security.ssl_cafile!r}: not a PEM file of CA certificates ({exc})") from None
    if security.ssl_certfile:
        try:
            # a callable, never None: with None, OpenSSL would ask for an encrypted key's password on the terminal
            context.load_cert_chain(
                security.ssl_certfile, security.ssl_keyfile or None, password=security.ssl_password.reveal
            )
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"ssl_certfile={security.ssl_certfile!r}, ssl_keyfile={security.ssl_keyfile!r}: cannot load the "
                f"client certificate and key ({exc}); an encrypted key needs ssl_password (or ssl_password_file)"
            ) from None
    context.check_hostname = security.ssl_endpoint_identification_algorithm == "https"
    return context
