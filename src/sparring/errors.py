"""The one exception type for user mistakes: the CLI prints its message, never a traceback; and
`read_user_text`, which reads a file a user handed in so that every failure is such a message."""

from __future__ import annotations

from pathlib import Path


class SparringError(Exception):
    """A user-facing error (bad config, missing file, unreachable model): one line that says
    what is wrong and how to fix it."""


def read_user_text(path: str | Path, error: type[SparringError] = SparringError) -> str:
    """The UTF-8 text of a file a user named; unreadable or not UTF-8 -> `error` naming it."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
