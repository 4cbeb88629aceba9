"""Security settings: validation, secrets kept out of reprs and the command line, and the aiokafka kwargs."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from aiokafka.abc import AbstractTokenProvider
from cryptography.hazmat.primitives import serialization

from streamlet.app_commands import parse_config_pairs, resolve_worker_config
from streamlet.config import ENVIRONMENT_VARIABLES, StreamsConfig, security_from_environment
from streamlet.errors import ConfigError
from streamlet.kafka.certificates import TlsFiles, make_tls_files
from streamlet.kafka.security import ClientSecurity, Password, ssl_context

SECRET = "s3cr3t-do-not-print"


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


def test_plaintext_by_default() -> None:
    config = StreamsConfig("app")
    assert config.security.client_kwargs() == {"security_protocol": "PLAINTEXT"}
    assert config.cluster.client_kwargs()["bootstrap_servers"] == config.bootstrap_servers


def test_sasl_ssl_kwargs_share_one_context(tls: TlsFiles) -> None:
    config = StreamsConfig(
        "app",
        security_protocol="sasl_ssl",
        ssl_cafile=str(tls.ca),
        sasl_mechanism="scram-sha-512",
        sasl_plain_username="user",
        sasl_plain_password=SECRET,
    )
    kwargs = config.security.client_kwargs()
    assert kwargs["security_protocol"] == "SASL_SSL"
    assert kwargs["sasl_mechanism"] == "SCRAM-SHA-512"
    assert kwargs["sasl_plain_username"] == "user"
    assert kwargs["sasl_plain_password"] == SECRET
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext)
    assert kwargs["ssl_context"].check_hostname
    # every client of the config (and a copy of it) gets the same context, built once
    assert config.replace(num_stream_threads=2).security.client_kwargs()["ssl_context"] is kwargs["ssl_context"]


def test_mutual_tls_loads_the_client_certificate_and_may_skip_hostname_checks(tls: TlsFiles) -> None:
    security = ClientSecurity.from_settings(
        {
            "security_protocol": "SSL",
            "ssl_cafile": str(tls.ca),
            "ssl_certfile": str(tls.client_cert),
            "ssl_keyfile": str(tls.client_key),
            "ssl_endpoint_identification_algorithm": "",
        }
    )
    context = ssl_context(security)
    assert not context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED  # the CA is still checked
    assert "sasl_mechanism" not in security.client_kwargs()


def test_secrets_never_show_in_a_config_repr() -> None:
    config = StreamsConfig(
        "app", security_protocol="SASL_PLAINTEXT", sasl_plain_username="user", sasl_plain_password=SECRET
    )
    for text in (repr(config), str(config), repr(config.security), f"{config.sasl_plain_password}"):
        assert SECRET not in text
    assert "[hidden]" in repr(config)
    assert isinstance(config.sasl_plain_password, Password)


def test_password_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "pw"
    path.write_text(SECRET + "\n")
    config = StreamsConfig(
        "app", security_protocol="SASL_PLAINTEXT", sasl_plain_username="u", sasl_plain_password_file=str(path)
    )
    assert config.security.client_kwargs()["sasl_plain_password"] == SECRET
    with pytest.raises(ConfigError, match="sasl_plain_password_file='/nope': cannot read it"):
        StreamsConfig("app", sasl_plain_password_file="/nope")


def test_settings_and_secrets_from_the_environment() -> None:
    env = {
        ENVIRONMENT_VARIABLES["security_protocol"]: "SASL_PLAINTEXT",
        ENVIRONMENT_VARIABLES["sasl_mechanism"]: "PLAIN",
        ENVIRONMENT_VARIABLES["sasl_plain_username"]: "u",
        ENVIRONMENT_VARIABLES["sasl_plain_password"]: SECRET,
    }
    security = security_from_environment(env)
    assert security.client_kwargs()["sasl_plain_password"] == SECRET
    settings = resolve_worker_config({"--state-dir": None, "--threads": None, "--bootstrap-servers": None}, [], {}, env)
    assert StreamsConfig("app", **settings).security == security


def test_a_secret_on_the_command_line_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"never goes on the command line; set \$STREAMLET_SASL_PLAIN_PASSWORD"):
        parse_config_pairs([f"sasl.plain.password={SECRET}"])
    with pytest.raises(ConfigError, match="STREAMLET_SSL_PASSWORD"):
        parse_config_pairs(["ssl_password=x"])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"security_protocol": "TLS"}, "security_protocol='TLS': expected one of 'PLAINTEXT', 'SSL'"),
        ({"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"}, "sasl_mechanism='GSSAPI'"),
        ({"security_protocol": "SASL_SSL"}, "needs sasl_plain_username and sasl_plain_password"),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER"},
            "OAUTHBEARER needs sasl_oauth_token_provider",
        ),
        ({"security_protocol": "SSL", "ssl_cafile": "/no/ca.pem"}, "ssl_cafile='/no/ca.pem': no such file"),
        ({"ssl_endpoint_identification_algorithm": "dns"}, "ssl_endpoint_identification_algorithm='dns'"),
        ({"sasl_plain_password": "a", "sasl_plain_password_file": "/x"}, "not both"),
    ],
)
def test_invalid_settings_name_the_setting(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        StreamsConfig.from_mapping({"application_id": "app", **settings})


def test_aiokafka_names_get_a_hint() -> None:
    with pytest.raises(ConfigError, match="aiokafka's 'ssl_check_hostname': in streamlet, use ssl_endpoint_ident"):
        StreamsConfig.from_mapping({"application_id": "a", "ssl_check_hostname": False})


async def test_oauthbearer_token_hook_forms() -> None:
    async def token() -> str:
        return "tok-async"

    for hook, expected in ((lambda: "tok", "tok"), (token, "tok-async")):
        config = StreamsConfig(
            "app", security_protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER", sasl_oauth_token_provider=hook
        )
        provider = config.security.client_kwargs()["sasl_oauth_token_provider"]
        assert isinstance(provider, AbstractTokenProvider)
        assert await provider.token() == expected
    with pytest.raises(ConfigError, match="cannot import it"):
        StreamsConfig(
            "app",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider="no_such_module:token",
        )


def test_an_encrypted_client_key_needs_its_password(tmp_path: Path, tls: TlsFiles) -> None:
    key = serialization.load_pem_private_key(tls.client_key.read_bytes(), password=None)
    encrypted = tmp_path / "client-encrypted.key"
    encrypted.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(SECRET.encode()),
        )
    )
    password_file = tmp_path / "key-password"
    password_file.write_text(SECRET + "\n")
    settings = {
        "security_protocol": "SSL",
        "ssl_cafile": str(tls.ca),
        "ssl_certfile": str(tls.client_cert),
        "ssl_keyfile": str(encrypted),
    }
    loaded = ClientSecurity.from_settings({**settings, "ssl_password_file": str(password_file)})
    assert isinstance(loaded.client_kwargs()["ssl_context"], ssl.SSLContext)
    for wrong in ({}, {"ssl_password": "wrong"}):  # no password: an error, never a terminal prompt
        with pytest.raises(ConfigError, match="cannot load the client certificate and key .* needs ssl_password"):
            ClientSecurity.from_settings({**settings, **wrong})  # when the settings are built
