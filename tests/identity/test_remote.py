"""normalize_remote_url: one canonical `host[:port]/path` per repository, whatever the protocol."""

from __future__ import annotations

import pytest

from autopatch_tui.core.identity.remote import normalize_remote_url

GITHUB = "github.com/org/repo"

# The same GitHub repository written seven ways (protocols, case, credentials, whitespace, slashes).
SAME_GITHUB_REPO = [
    "https://github.com/Org/Repo.git",
    "http://github.com/org/repo",
    "git@github.com:Org/Repo.git",
    "ssh://git@github.com/org/repo.git",
    "git://github.com/org/repo.git",
    "https://user:token@github.com/org/repo.git",
    "  https://github.com/org/repo/  ",
    "github.com:org/repo",
    "https://GITHUB.COM/org/repo",
    "https://github.com/org/repo.git/",
    "HTTPS://github.com/org/repo.GIT",
    "git+ssh://git@github.com/org/repo.git",
    "ssh+git://git@github.com/org/repo.git",
    "\thttps://github.com/org/repo.git\n",
]


@pytest.mark.parametrize("url", SAME_GITHUB_REPO)
def test_same_repository_normalizes_to_one_form(url: str) -> None:
    assert normalize_remote_url(url) == GITHUB


GOLDEN = [
    # ports are kept, whatever the scheme
    ("ssh://git@github.com:22/org/repo.git", "github.com:22/org/repo"),
    ("ssh://git@host:2222/a/b.git", "host:2222/a/b"),
    ("https://gitlab.example.com:8443/group/sub/repo.git", "gitlab.example.com:8443/group/sub/repo"),
    # nested groups survive, only the host/path case is folded
    ("git@GitLab.Example.com:Group/Sub/Repo.git", "gitlab.example.com/group/sub/repo"),
    # credentials are dropped, including a password with '@' and ':' in it
    ("https://user:p@ss:w@github.com/org/repo.git", GITHUB),
    ("https://oauth2:glpat-XYZ@gitlab.example.com:8443/g/r.git", "gitlab.example.com:8443/g/r"),
    # scp form: a numeric first path segment is a path, not a port (git's own reading)
    ("git@github.com:22/org/repo.git", "github.com/22/org/repo"),
    # scp form with a bracketed IPv6 host
    ("git@[::1]:org/repo.git", "[::1]/org/repo"),
    ("ssh://git@[::1]:2222/org/repo.git", "[::1]:2222/org/repo"),
    # only ONE trailing .git is dropped; a .git inside the path stays
    ("https://github.com/org/repo.git.git", "github.com/org/repo.git"),
    ("https://github.com/org.git/repo", "github.com/org.git/repo"),
    # '@' in the path is not userinfo
    ("https://host/org/a@b.git", "host/org/a@b"),
    # local paths and file URLs agree
    ("/srv/git/x.git", "srv/git/x"),
    ("file:///srv/git/x.git", "srv/git/x"),
    ("FILE:///srv/git/x.git/", "srv/git/x"),
    ("/srv/git/x/.git", "srv/git/x"),
    ("../Sibling.git", "../sibling"),
    # a Windows drive is a path, not scp host "c"
    ("C:\\Src\\Repo.git", "c:\\src\\repo"),
    ("C:/Src/Repo.git", "c:/src/repo"),
    # no host before the colon: not scp
    (":org/repo", ":org/repo"),
    # any other scheme is dropped too, so protocol never changes identity
    ("ftps://host/org/repo.git", "host/org/repo"),
    # blanks
    ("", ""),
    ("   ", ""),
    (None, ""),
]


@pytest.mark.parametrize(("url", "expected"), GOLDEN)
def test_golden_table(url: str | None, expected: str) -> None:
    assert normalize_remote_url(url) == expected


def test_port_distinguishes_repositories() -> None:
    assert normalize_remote_url("ssh://git@github.com:22/org/repo.git") != normalize_remote_url(
        "ssh://git@github.com/org/repo.git"
    )


def test_different_repositories_stay_different() -> None:
    assert normalize_remote_url("git@github.com:org/repo.git") != normalize_remote_url(
        "git@github.com:org/repo2.git"
    )
    assert normalize_remote_url("git@github.com:org/repo.git") != normalize_remote_url(
        "git@gitlab.com:org/repo.git"
    )


@pytest.mark.parametrize(
    "canonical", [GITHUB, "gitlab.example.com/group/sub/repo", "srv/git/x", "[::1]/org/repo"]
)
def test_port_free_canonical_form_is_a_fixed_point(canonical: str) -> None:
    # (`host:port/path` is not: without a scheme it reads as scp syntax, as git itself would.)
    assert normalize_remote_url(canonical) == canonical


def test_token_never_survives() -> None:
    out = normalize_remote_url("https://x-access-token:ghs_SECRET123@github.com/org/repo.git")
    assert "secret" not in out
    assert "x-access-token" not in out
    assert out == GITHUB
