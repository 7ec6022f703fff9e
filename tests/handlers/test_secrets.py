"""Secrets on added lines: detect-secrets' shape plugins and ralph's token shapes find them,
name their kind and never their value; old secrets, digests and keyword-looking lines are
not hits; nothing goes on the network; detect-secrets is imported only when needed."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from pipeline.core.screening import ChangeStatus, FileChange, ScreenHit, ScreenKind
from pipeline.handlers.redaction import TOKEN_SHAPES
from pipeline.handlers.runtime import find_secrets
from pipeline.handlers.runtime._secrets import SHAPE_NAMES, SHAPE_PLUGINS, added_lines

AWS_KEY = "AKIAJ5Q7R2D9EXAMPLEZ"
PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\n"
    "-----END RSA PRIVATE KEY-----\n"
)
GITHUB_TOKEN = "ghp_" + "R2d9J5q7" * 4 + "Xy"
ANTHROPIC_KEY = "sk-ant-api03-" + "q7R2d9J5x" * 4
SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def modified(path: str, old: str, new: str) -> FileChange:
    return FileChange(
        path=path, old_path=None, status=ChangeStatus.MODIFIED, old_text=old, new_text=new
    )


def added(path: str, new: str) -> FileChange:
    return FileChange(
        path=path, old_path=None, status=ChangeStatus.ADDED, old_text=None, new_text=new
    )


def found(*changes: FileChange) -> list[str]:
    return [hit.summary for hit in find_secrets(changes)]


def test_an_aws_key_and_a_private_key_on_added_lines_are_found() -> None:
    old = "import os\n\nDEBUG = False\n"
    new = f'import os\n\nDEBUG = False\nKEY = "{AWS_KEY}"\n' + PRIVATE_KEY
    assert found(modified("app/settings.py", old, new)) == [
        "secret_added app/settings.py:4: AWS Access Key",
        "secret_added app/settings.py:5: Private Key",
    ]


def test_a_secret_the_old_text_had_is_not_reported() -> None:
    """Kept, moved within the file or re-indented: not added, not a hit."""
    old = f'KEY = "{AWS_KEY}"\nx = 1\n'
    assert found(modified("a.py", old, old + "y = 2\n")) == []
    assert found(modified("a.py", old, f'x = 1\n\nKEY = "{AWS_KEY}"\n')) == []
    assert found(modified("a.py", old, f'    KEY  =  "{AWS_KEY}"\nx = 1\n')) == []


def test_a_second_copy_of_an_old_secret_line_is_added() -> None:
    """Lines are a multiset: the old text's one copy matches one new copy, the next is added."""
    old = f'KEY = "{AWS_KEY}"\n'
    assert found(modified("a.py", old, old + "x = 1\n" + old)) == [
        "secret_added a.py:3: AWS Access Key"
    ]


def test_a_renamed_file_keeping_its_secret_gives_no_hit() -> None:
    text = f'KEY = "{AWS_KEY}"\n'
    renamed = FileChange(
        path="new.py", old_path="old.py", status=ChangeStatus.RENAMED, old_text=text, new_text=text
    )
    assert found(renamed) == []


def test_the_value_never_appears_in_a_hit() -> None:
    secrets = (AWS_KEY, GITHUB_TOKEN, ANTHROPIC_KEY, "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgO")
    new = f'A = "{AWS_KEY}"\nG = "{GITHUB_TOKEN}"\nN = "{ANTHROPIC_KEY}"\n' + PRIVATE_KEY
    hits = find_secrets((added("leak.py", new),))
    assert len(hits) == 4
    shown = repr(hits) + "".join(h.summary for h in hits)
    assert not [s for s in secrets if s in shown or s[:12] in shown]


def test_a_github_token_is_found() -> None:
    assert found(added("ci.sh", f"export GH={GITHUB_TOKEN}\n")) == [
        "secret_added ci.sh:1: GitHub Token"
    ]


def test_a_key_only_ralphs_token_shapes_know_is_found() -> None:
    """detect-secrets has no Anthropic detector: the token shapes name it."""
    assert found(added("agent.py", f'ANTHROPIC_API_KEY = "{ANTHROPIC_KEY}"\n')) == [
        "secret_added agent.py:1: Anthropic API Key"
    ]


def test_a_line_both_finders_know_is_one_hit() -> None:
    """An AWS key is found by detect-secrets and by the token shapes, named once."""
    assert find_secrets((added("a.py", f"{AWS_KEY}\n"),)) == (
        ScreenHit(kind=ScreenKind.SECRET_ADDED, path="a.py", line=1, detail="AWS Access Key"),
    )


def test_a_digest_and_a_keyword_password_are_not_secrets() -> None:
    """The entropy and keyword plugins are off: a sha256 digest and ``password = "hunter2"``
    are ordinary lines."""
    new = f'DIGEST = "{SHA256}"\npassword = "hunter2"\nsecret_key = "hunter2hunter2hunter2"\n'
    assert found(added("config.py", new)) == []


def test_deleted_files_and_files_without_text_are_not_read() -> None:
    leak = f'KEY = "{AWS_KEY}"\n'
    deleted = FileChange(
        path="gone.py", old_path=None, status=ChangeStatus.DELETED, old_text=leak, new_text=None
    )
    binary = FileChange(
        path="blob.bin", old_path=None, status=ChangeStatus.ADDED, old_text=None, new_text=None
    )
    assert found(deleted, binary) == []


def test_line_numbers_are_gits_whatever_the_line_ends() -> None:
    """CRLF line ends, a lone CR and a form feed do not shift the number a hit names."""
    new = f"a = 1\r\nb = '\r'\nc = '\f'\nKEY = '{AWS_KEY}'\r\n"
    assert found(added("a.py", new)) == ["secret_added a.py:4: AWS Access Key"]


def test_hits_are_sorted_by_path_line_and_kind() -> None:
    changes = (
        added("z.py", f"{AWS_KEY}\n"),
        added("a.py", f"x = 1\n{GITHUB_TOKEN}\n{AWS_KEY}\n"),
    )
    assert (
        found(*changes)
        == found(*reversed(changes))
        == [
            "secret_added a.py:2: GitHub Token",
            "secret_added a.py:3: AWS Access Key",
            "secret_added z.py:1: AWS Access Key",
        ]
    )


def test_added_lines_are_a_multiset_per_file() -> None:
    """Each old line matches one new line, first ones first; whitespace runs fold; a final
    newline ends a line, it does not start one."""
    assert added_lines("a\nb\n", "b\na\n") == {}
    assert added_lines("a\n", "a\na\n") == {2: "a"}
    assert added_lines("x =  1\n", "  x = 1\r\n") == {}
    assert added_lines(None, "a\nb") == {1: "a", 2: "b"}
    assert added_lines("a", "a\n\n") == {2: ""}


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every attempt to connect or resolve a name is recorded and refused."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("no network in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


def test_nothing_is_verified_online(no_network: list[object]) -> None:
    """Tokens of providers whose plugins can verify online (Slack, Stripe, GitHub, ...) are
    found with no connection tried."""
    new = (
        'slack = "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"\n'
        'stripe = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"\n'
        f'github = "{GITHUB_TOKEN}"\n'
        'mail = "' + "0123456789abcdef" * 2 + '-us12"\n'
        'db = "postgresql://ralph:s3cretpass@db.internal/ralph"\n'
    )
    hits = find_secrets((added("keys.py", new),))
    assert [h.line for h in hits] == [1, 2, 3, 4, 5]
    assert no_network == []


def test_the_plugins_are_the_shape_plugins_of_the_installed_detect_secrets() -> None:
    """Every plugin named exists; the four left out are the entropy, keyword and IP ones."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    known = {cls.__name__ for cls in get_mapping_from_secret_type_to_class().values()}
    assert set(SHAPE_PLUGINS) <= known
    assert known - set(SHAPE_PLUGINS) == {
        "Base64HighEntropyString",
        "HexHighEntropyString",
        "KeywordDetector",
        "IPPublicDetector",
    }


def test_every_token_shape_has_a_name() -> None:
    """A shape added to the redactor without a name here would be named by its bare key."""
    assert {name for name, _, _ in TOKEN_SHAPES} == set(SHAPE_NAMES)


def test_detect_secrets_is_imported_only_for_added_lines_and_leaves_warnings_alone() -> None:
    """In a fresh interpreter: no import for a change set with nothing added; after a scan,
    Python's warnings are shown as before the import."""
    program = """
import sys, warnings
from pipeline.handlers.runtime._secrets import find_secrets
from pipeline.core.screening import ChangeStatus, FileChange
shown = warnings.showwarning
find_secrets((FileChange(
    path="a", old_path=None, status=ChangeStatus.DELETED, old_text="x\\n", new_text=None
),))
print("detect_secrets" in sys.modules)
find_secrets((FileChange(
    path="a", old_path=None, status=ChangeStatus.ADDED, old_text=None, new_text="x\\n"
),))
print("detect_secrets" in sys.modules, warnings.showwarning is shown)
"""
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["False", "True", "True"]
