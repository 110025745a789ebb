"""Pure parts of the dashboard: topic categories, the user file and session cookies."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("starlette", reason="rocketq[dashboard] (in dev) is not installed")

from rocketq.dashboard.auth import SessionSigner, load_users, password_ok
from rocketq.dashboard.service import topic_category
from rocketq.errors import IllegalArgumentError


@pytest.mark.parametrize(
    ("topic", "category"),
    [
        ("orders", "normal"),
        ("%RETRY%g1", "retry"),
        ("%DLQ%g1", "dlq"),
        ("TBW102", "system"),
        ("SCHEDULE_TOPIC_XXXX", "system"),
        ("DefaultCluster_REPLY_TOPIC", "system"),
        ("rmq_sys_wheel", "system"),
        ("broker-a", "system"),
    ],
)
def test_topic_categories(topic: str, category: str) -> None:
    assert topic_category(topic, frozenset({"broker-a", "DefaultCluster"})) == category


def test_user_file_with_admin_flag_comments_and_hashes(tmp_path: Path) -> None:
    f = tmp_path / "users.properties"
    digest = hashlib.sha256(b"s3cret").hexdigest()
    f.write_text(f"# users\nadmin=admin,1\nops=sha256:{digest}\n", encoding="utf-8")
    users = load_users(f)
    assert users == {"admin": "admin", "ops": f"sha256:{digest}"}
    assert password_ok(users["admin"], "admin")
    assert not password_ok(users["admin"], "Admin")
    assert password_ok(users["ops"], "s3cret")
    assert not password_ok(users["ops"], "sha256:" + digest)


def test_an_empty_or_missing_user_file_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.write_text("# nobody\n", encoding="utf-8")
    with pytest.raises(IllegalArgumentError, match="names no user"):
        load_users(empty)
    with pytest.raises(IllegalArgumentError, match="cannot read"):
        load_users(tmp_path / "absent")


def test_session_cookies_are_signed_and_expire() -> None:
    now = [1_000_000.0]
    signer = SessionSigner(b"k" * 32, clock=lambda: now[0])
    cookie = signer.make("admin")
    assert signer.user(cookie) == "admin"
    _user, expiry, sig = cookie.split("|")
    assert signer.user(f"root|{expiry}|{sig}") is None  # forged user
    assert SessionSigner(b"x" * 32, clock=lambda: now[0]).user(cookie) is None  # another secret
    assert signer.user(None) is None
    assert signer.user("garbage") is None
    now[0] += 13 * 3600
    assert signer.user(cookie) is None  # expired
