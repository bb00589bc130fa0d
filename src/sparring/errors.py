"""The one exception type for user mistakes: the CLI prints its message, never a traceback;
`read_user_text`, which reads a file a user handed in so that every failure is such a message;
and `disk_full`, which turns a write that found no room (ENOSPC, EDQUOT, EFBIG) into one."""

from __future__ import annotations

import errno
from pathlib import Path

DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


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


def disk_full(exc: BaseException, path: str | Path | None = None) -> SparringError | None:
    """A one-line SparringError naming `path` (or the file the OS names) for a write that failed
    because the disk, the quota or the process's file-size limit is full; None for any other
    error. Writers that use it replace files atomically, so the previous version is intact."""
    if not isinstance(exc, OSError) or exc.errno not in DISK_FULL_ERRNOS:
        return None
    where = path if path is not None else (exc.filename or "a file")
    why = {
        errno.ENOSPC: "no space left on device",
        errno.EDQUOT: "disk quota exceeded",
        errno.EFBIG: "file too large (the process's file-size limit)",
    }[exc.errno]
    return SparringError(
        f"{where}: {why} while writing; the previous version is intact; "
        "free space there (or write elsewhere) and run again (--resume continues)"
    )
