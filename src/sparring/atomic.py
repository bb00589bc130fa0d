"""Crash-safe local writes: a file or a folder is replaced whole or not at all.

Covers: `write_file` (temporary sibling, fsync, rename over the old file), `atomic_dir` (fill a
temporary sibling folder; on success it replaces the target in one step: renameat2
RENAME_EXCHANGE on Linux when the target exists, else two renames), and `sweep_temps` (remove
what killed writers left beside a folder). A process killed at any point leaves the old version
or the new one, never a torn one; a write that finds the disk, quota or file-size limit full
raises a one-line SparringError naming the path (`errors.disk_full`), the old version intact.

Does not cover: durability against power loss beyond fsync of each file and rename ordering;
S3 (sparring.storage, whose local paths use this module).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sparring.errors import disk_full


def write_file(path: Path, data: bytes) -> None:
    """Write `data` to a temporary sibling, fsync it, rename it over `path`."""
    tmp = path.with_name(f".{path.name}-{secrets.token_hex(4)}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        err = disk_full(exc, path)
        if err is not None:
            raise err from None
        raise
    finally:
        if tmp.exists():
            tmp.unlink()


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux renameat2 RENAME_EXCHANGE); False when the
    platform or file system cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _swap_in(tmp: Path, out: Path) -> None:
    """Put the finished folder `tmp` at `out`; the old `out` ends up at `tmp` (to be removed)."""
    if not out.exists() and not out.is_symlink():
        os.rename(tmp, out)
        return
    if _exchange(tmp, out):
        return
    # No atomic exchange here: old aside, new in. A reader may briefly find no folder at all
    # (never a mixed one).
    old = out.with_name(f".{out.name}-old-{secrets.token_hex(4)}")
    os.rename(out, old)
    os.rename(tmp, out)
    os.rename(old, tmp)


@contextmanager
def atomic_dir(out_dir: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of `out_dir` to fill; when the block succeeds it replaces
    `out_dir` in one step, and when it fails it is removed and `out_dir` is untouched.
    A full disk inside the block becomes a one-line SparringError naming `out_dir`."""
    out = Path(out_dir)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    except OSError as exc:
        err = disk_full(exc, out)
        if err is not None:
            raise err from None
        raise
    try:
        try:
            yield tmp
            _swap_in(tmp, out)
        except OSError as exc:
            err = disk_full(exc, out)
            if err is not None:
                raise err from None
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def sweep_temps(out_dir: str | Path) -> int:
    """Remove what killed writers of `out_dir` left beside it (`.NAME-*` temporary folders and
    files); returns how many. Call it only where a single writer owns `out_dir`."""
    out = Path(out_dir)
    if not out.parent.is_dir():
        return 0
    n = 0
    for p in out.parent.glob(f".{out.name}-*"):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        n += 1
    return n
