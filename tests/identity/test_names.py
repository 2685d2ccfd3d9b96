"""Store names: `project-` + 26 Crockford base32 chars of SHA-256(canonical location)."""

from __future__ import annotations

import base64
import hashlib
import os
from pathlib import Path

import pytest

from autopatch_tui.core.identity.names import (
    STORE_NAME_PREFIX,
    canonical_location,
    is_store_name,
    store_name_for_location,
)

ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def reference_name(location: str) -> str:
    """Independent reference: top 130 bits of the big-endian digest, 5 bits per char, MSB first."""
    n = int.from_bytes(hashlib.sha256(location.encode("utf-8")).digest(), "big")
    return "project-" + "".join(ALPHABET[(n >> (256 - 5 * (i + 1))) & 31] for i in range(26))


def rfc4648_name(location: str) -> str:
    """Second reference: RFC 4648 base32 is the same bit layout, only with another alphabet."""
    b32 = base64.b32encode(hashlib.sha256(location.encode("utf-8")).digest()).decode("ascii")
    return "project-" + b32[:26].translate(str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", ALPHABET))


def test_prefix_constant() -> None:
    assert STORE_NAME_PREFIX == "project-"


@pytest.mark.parametrize("location", ["/srv/repo", "/home/ada/src/autopatch", "/", "/tmp/é ü/日本"])
def test_matches_both_reference_implementations(location: str) -> None:
    expected = reference_name(location)
    assert expected == rfc4648_name(location)
    assert store_name_for_location(location) == expected


@pytest.mark.parametrize(
    ("location", "digest_hex", "expected"),
    [
        # digest 0x20 0x3f ... = 00100 00000 11111 ... -> "4", "0", "Z", ...
        (
            "/srv/repo",
            "203fce37fbfc82f3bd7cd983ce20b2e7db8ad25ee40b8382c9345c1ae1d6407d",
            "project-40ZWWDZVZJ1F7FBWV61WW85JWZ",
        ),
        (
            "/",
            "8a5edab282632443219e051e4ade2d1d5bbc671c781051bf1437897cbdfea0f1",
            "project-H9FDNCM2CCJ468CY0MF4NQHD3N",
        ),
    ],
)
def test_known_vectors(location: str, digest_hex: str, expected: str) -> None:
    # Pinned literals (cross-checked by both references) catch any change of hash input or bit order.
    assert hashlib.sha256(location.encode("utf-8")).hexdigest() == digest_hex
    assert reference_name(location) == expected
    assert rfc4648_name(location) == expected
    assert store_name_for_location(location) == expected


def test_stable_across_calls() -> None:
    assert store_name_for_location("/srv/repo") == store_name_for_location("/srv/repo")


def test_format() -> None:
    name = store_name_for_location("/srv/repo")
    assert name.startswith("project-")
    body = name[len("project-"):]
    assert len(body) == 26
    assert set(body) <= set(ALPHABET)
    assert is_store_name(name)


def test_different_locations_differ() -> None:
    names = {store_name_for_location(p) for p in ["/srv/repo", "/srv/repo2", "/srv/Repo", "/srv/repo/"]}
    assert len(names) == 4


def test_rejects_non_str_and_empty() -> None:
    with pytest.raises(TypeError):
        store_name_for_location(b"/srv/repo")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        store_name_for_location(Path("/srv/repo"))  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store_name_for_location("")


def test_undecodable_path_bytes_hash_as_the_raw_bytes() -> None:
    raw = b"/srv/caf\xe9"  # latin-1 file name on a UTF-8 system
    location = raw.decode("utf-8", errors="surrogateescape")
    n = int.from_bytes(hashlib.sha256(raw).digest(), "big")
    expected = "project-" + "".join(ALPHABET[(n >> (256 - 5 * (i + 1))) & 31] for i in range(26))
    assert store_name_for_location(location) == expected


@pytest.mark.parametrize(
    "text",
    [
        "project-0123456789ABCDEFGHJKMNPQRS",
        "project-ZZZZZZZZZZZZZZZZZZZZZZZZZZ",
        "project-00000000000000000000000000",
    ],
)
def test_is_store_name_accepts(text: str) -> None:
    assert is_store_name(text)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "project-",
        "project-0123456789ABCDEFGHJKMNPQR",  # 25
        "project-0123456789ABCDEFGHJKMNPQRST",  # 27
        "project-0123456789abcdefghjkmnpqrs",  # lower case
        "project-0123456789ABCDEFGHJKMNPQRI",  # I is not Crockford
        "project-0123456789ABCDEFGHJKMNPQRL",  # L
        "project-0123456789ABCDEFGHJKMNPQRO",  # O
        "project-0123456789ABCDEFGHJKMNPQRU",  # U
        "Project-0123456789ABCDEFGHJKMNPQRS",
        "projet-0123456789ABCDEFGHJKMNPQRST",
        "0123456789ABCDEFGHJKMNPQRS",
        "project-0123456789ABCDEFGHJKMNPQRS\n",
        " project-0123456789ABCDEFGHJKMNPQRS",
        "project-0123456789ABCDEFGHJKMNPQRS/x",
        "project_0123456789ABCDEFGHJKMNPQRS",
    ],
)
def test_is_store_name_rejects(text: str) -> None:
    assert not is_store_name(text)


def test_is_store_name_rejects_non_str() -> None:
    assert not is_store_name(None)  # type: ignore[arg-type]
    assert not is_store_name(b"project-0123456789ABCDEFGHJKMNPQRS")  # type: ignore[arg-type]


def test_canonical_location_is_resolved_absolute_posix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real, target_is_directory=True)
    expected = real.resolve().as_posix()

    assert canonical_location(real) == expected
    assert canonical_location(link) == expected
    assert canonical_location(real / "sub" / "..") == expected
    assert canonical_location(str(real)) == expected
    monkeypatch.chdir(tmp_path)
    assert canonical_location(Path("real")) == expected
    assert os.path.isabs(canonical_location("real"))


def test_same_repo_spelled_differently_gets_one_name(tmp_path: Path) -> None:
    real = tmp_path / "repo"
    real.mkdir()
    link = tmp_path / "alias"
    link.symlink_to(real, target_is_directory=True)
    names = {store_name_for_location(canonical_location(p)) for p in [real, link, real / ".", str(real) + "/"]}
    assert len(names) == 1
    assert names == {reference_name(real.resolve().as_posix())}
