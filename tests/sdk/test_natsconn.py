"""The NATS connection model: server lists, redaction, one auth method, owner-only secret files."""

from __future__ import annotations

from pathlib import Path

import pytest
from tenantguard.errors import ConfigError
from tenantguard.feed.natsconn import NatsConnection, parse_servers
from tenantguard.identity.keys import write_private
from tenantguard.util.urls import shown_text, shown_url


def test_server_lists_are_comma_separated_and_bare_hosts_get_nats_scheme() -> None:
    assert parse_servers("nats://a:4222, b:4223,,tls://c") == ("nats://a:4222", "nats://b:4223", "tls://c")
    assert parse_servers(["nats://a:1,nats://a:1"]) == ("nats://a:1",)
    for bad in ("", " , ", "http://a:1", "nats://a:99999"):
        with pytest.raises(ConfigError):
            parse_servers(bad)


def test_redaction_keeps_the_user_and_hides_passwords_and_tokens() -> None:
    assert shown_url("nats://plane:s3cret@h:4222") == "nats://plane:***@h:4222"
    assert shown_url("tls://tok3n@h:4222") == "tls://***@h:4222"
    assert shown_url("nats://h:4222") == "nats://h:4222"
    assert shown_text("failed: nats://u:p@a:1, nats://t@b:2") == "failed: nats://u:***@a:1, nats://***@b:2"
    conn = NatsConnection.of("nats://u:pw@a:1,nats://b:2")
    assert "pw" not in repr(conn) and "pw" not in str(conn.redacted())


def test_one_authentication_method_and_no_url_credentials_beside_options(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    write_private(secret, b"a-secret-value\n")
    with pytest.raises(ConfigError, match="one NATS authentication method"):
        NatsConnection(servers=("nats://a:1",), token_file=secret, nkey_seed_file=secret)
    with pytest.raises(ConfigError, match="go together"):
        NatsConnection(servers=("nats://a:1",), user="plane")
    with pytest.raises(ConfigError, match="both in a server URL"):
        NatsConnection(servers=("nats://u:p@a:1",), token_file=secret)
    conn = NatsConnection(servers=("nats://a:1",), user="plane", password_file=secret)
    assert conn.connect_kwargs()["password"] == "a-secret-value" and conn.auth_kind == "password"
    assert "a-secret-value" not in repr(conn)
