"""Secrets on the lines a change set adds, for the ``secret_added`` postcondition (I/O).

Two finders, their hits united: detect-secrets 1.5 with its provider-shape plugins only
(:data:`SHAPE_PLUGINS`), and ralph's own :data:`~pipeline.handlers.redaction.TOKEN_SHAPES`,
which know keys detect-secrets does not (Anthropic's, OpenAI's newer ones, Hugging Face's).
A hit names the file, the line and the kind of secret, never the secret itself. The design
is section 12 of ``docs/research/gates-design.md``.

**Added lines.** A file's lines are cut at ``\\n`` (a ``\\r`` before it dropped), as git and
the screen count them, and compared with whitespace runs folded to one space, so that a line
only re-indented is not added. They are counted as a multiset per file: the new text's lines
are matched in order against the old text's, each old line matching once, and the new lines
left over are the added ones. A line copied (a second copy of a line the old text had once)
is added; a line moved within the file is not; a secret moved to another file is added there.
A file with no old text (added, binary or too large before) has every line added.

**detect-secrets.** Imported only when a file has added lines (the import costs about 100
ms). It scans a file's whole new text, so its filters see the context they expect, and its
hits off the added lines are dropped. Its file scanner reads a path, so each new text is
written to a private temporary folder under the file's own name (its filters look at names:
lock files, ``.svg`` and the like are skipped), never in the workspace. It verifies nothing
online: verification runs only under a verification filter, which is never configured here.
Its settings are global to the process: one scan at a time (the runtime's one thread).
"""

from __future__ import annotations

import functools
import locale
import re
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path, PurePosixPath
from typing import Final

from pipeline.core.screening import ChangeStatus, FileChange, ScreenHit, ScreenKind
from pipeline.events import Count
from pipeline.handlers.redaction import TOKEN_SHAPES

__all__ = ["SHAPE_NAMES", "SHAPE_PLUGINS", "added_lines", "find_secrets"]

SHAPE_PLUGINS: Final = (
    "AWSKeyDetector",
    "ArtifactoryDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "JwtTokenDetector",
    "MailchimpDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
)
"""The detect-secrets plugins used: the 23 of its 27 that know a provider's token by its
shape. Left out: the two entropy plugins (they flag sha256 digests), the keyword plugin
(``password = "hunter2"``) and the public IP address one (an address is no secret)."""

SHAPE_NAMES: Final = {
    "private-key": "Private Key",
    "anthropic-key": "Anthropic API Key",
    "openai-key": "OpenAI Token",
    "github-token": "GitHub Token",
    "gitlab-token": "GitLab Token",
    "slack-token": "Slack Token",
    "aws-access-key": "AWS Access Key",
    "google-api-key": "Google API Key",
    "stripe-key": "Stripe Access Key",
    "huggingface-token": "Hugging Face Token",
    "jwt": "JSON Web Token",
    "bearer-token": "Bearer Token",
}
"""How a hit names each token shape: detect-secrets' own name where it knows the same kind,
so that a line both find is one hit."""

_VERIFICATION_FILTER: Final = (
    "detect_secrets.filters.common.is_ignored_due_to_verification_policies"
)


@functools.cache
def _token_shapes() -> re.Pattern[str]:
    # One alternation, first shape first, as the redactor reads them: an Anthropic key,
    # which the OpenAI shape also matches, is named once, as Anthropic's.
    return re.compile(
        "|".join(f"(?P<s{i}>{regex})" for i, (_, regex, _) in enumerate(TOKEN_SHAPES))
    )


def _lines(text: str) -> list[str]:
    lines = [line.removesuffix("\r") for line in text.split("\n")]
    if len(lines) > 1 and lines[-1] == "":
        lines.pop()  # the end of the last line, not a line
    return lines


def _key(line: str) -> str:
    return " ".join(line.split())


def added_lines(old_text: str | None, new_text: str) -> dict[int, str]:
    """The lines ``new_text`` adds to ``old_text``: 1-based number -> line (see the module)."""
    left = Counter(_key(line) for line in _lines(old_text)) if old_text is not None else Counter()
    added: dict[int, str] = {}
    for number, line in enumerate(_lines(new_text), start=1):
        key = _key(line)
        if left[key] > 0:
            left[key] -= 1
        else:
            added[number] = line
    return added


def _shape_hits(path: str, added: dict[int, str]) -> Iterable[ScreenHit]:
    shapes = _token_shapes()
    for number, line in added.items():
        for match in shapes.finditer(line):
            name = TOKEN_SHAPES[int((match.lastgroup or "s0")[1:])][0]
            yield ScreenHit(
                kind=ScreenKind.SECRET_ADDED,
                path=path,
                line=Count(number),
                detail=SHAPE_NAMES.get(name, name),
            )


_Scanned = tuple[str, str, dict[int, str]]
"""A file to scan: its path, its new text and its added lines."""


def _plugin_hits(scanned: Sequence[_Scanned]) -> Iterable[ScreenHit]:
    """detect-secrets' hits on the added lines of each scanned file."""
    shown = warnings.showwarning
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import transient_settings

    # Its logger module routes every Python warning of the process to logging when first
    # imported (logging.captureWarnings): ralph's warnings are put back as they were.
    warnings.showwarning = shown
    # detect-secrets opens the file with the locale's encoding: written in it, every text
    # reads back line for line (a character it cannot hold becomes "?", never a line break).
    encoding = locale.getpreferredencoding(False)
    hits: list[ScreenHit] = []
    with (
        transient_settings(
            {"plugins_used": [{"name": name} for name in SHAPE_PLUGINS]}
        ) as settings,
        tempfile.TemporaryDirectory(prefix="ralph-secrets-") as folder,
    ):
        # The file exists (section 12 found the check in the way); no verification, ever.
        settings.disable_filters(
            "detect_secrets.filters.common.is_invalid_file", _VERIFICATION_FILTER
        )
        for index, (path, text, added) in enumerate(scanned):
            place = Path(folder, str(index))
            place.mkdir()
            file = place / (PurePosixPath(path).name or "file")
            # A lone \r would be a line break to its reader: the numbers must stay git's.
            lines = (line.replace("\r", " ") for line in _lines(text))
            file.write_text("\n".join(lines) + "\n", encoding, "replace")
            for secret in scan_file(str(file)):
                if secret.line_number in added:
                    hits.append(
                        ScreenHit(
                            kind=ScreenKind.SECRET_ADDED,
                            path=path,
                            line=Count(secret.line_number),
                            detail=secret.type,
                        )
                    )
    return hits


def find_secrets(changes: Sequence[FileChange]) -> tuple[ScreenHit, ...]:
    """A ``secret_added`` hit for each kind of secret found on each added line of
    ``changes``, sorted by path, line and kind; the detail names the kind, never the value.
    Deleted files and files with no new text (binary, too large, a link) are not read."""
    scanned: list[_Scanned] = []
    for change in changes:
        if change.status is ChangeStatus.DELETED or change.new_text is None:
            continue
        added = added_lines(change.old_text, change.new_text)
        if added:
            scanned.append((change.path, change.new_text, added))
    if not scanned:
        return ()
    hits = {hit for path, _, added in scanned for hit in _shape_hits(path, added)}
    hits.update(_plugin_hits(scanned))
    return tuple(sorted(hits, key=lambda h: (h.path, h.line, h.detail)))
