"""Run the `sparring` command and SIGKILL it at its N-th file-system change under a folder.

    python killpoint.py N FOLDER COUNT_FILE -- train --config ... --workdir FOLDER/...

An audit hook (sys.addaudithook) counts the events that change files under FOLDER: opening a
file for writing, mkdir, mkstemp/mkdtemp, rename/replace, link, remove, rmdir, rmtree, copyfile,
chmod/utime, and looking up renameat2 (just before a folder is swapped in). At the N-th one the
process sends itself SIGKILL: no `finally`, no atexit, no flush, exactly like an evicted pod, but
at a point chosen among the steps of a write (after the temp file is opened and before it is
renamed, between two files of a checkpoint, between the old folder's removal and the new one's
rename...). N=0 never kills; the number of events is then written to COUNT_FILE at exit.
"""

from __future__ import annotations

import os
import signal
import sys

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
EVENTS = {
    "os.mkdir", "os.rename", "os.link", "os.remove", "os.rmdir", "shutil.rmtree",
    "shutil.copyfile", "tempfile.mkstemp", "tempfile.mkdtemp", "os.truncate", "os.chmod",
    "os.utime",
}  # fmt: skip


def main() -> int:
    n, folder, count_file = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    argv = sys.argv[sys.argv.index("--") + 1 :]
    me = os.getpid()
    seen = [0]

    def under(value: object) -> bool:
        return isinstance(value, (str, bytes, os.PathLike)) and os.fsdecode(value).startswith(
            folder
        )

    def hook(event: str, args: tuple) -> None:
        if os.getpid() != me:
            return  # a forked child (sandbox) counts nothing
        if event == "open":
            path, mode, flags = [*args, None, None, None][:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & WRITE_FLAGS
            )
            if not (writing and under(path)):
                return
        elif event == "ctypes.dlsym":
            if not (len(args) > 1 and args[1] == "renameat2"):
                return
        elif event not in EVENTS or not any(under(a) for a in args):
            return
        seen[0] += 1
        if seen[0] == n:
            os.kill(me, signal.SIGKILL)

    sys.addaudithook(hook)
    from sparring.cli.main import main as sparring_main

    try:
        return sparring_main(argv)
    finally:
        if n == 0:
            with open(count_file, "w") as fh:
                fh.write(str(seen[0]))


if __name__ == "__main__":
    sys.exit(main())
