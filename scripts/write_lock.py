"""Write requirements.lock from a freshly resolved virtualenv (called by `make lock`).

Takes `pip freeze` of that venv, leaves out Sparring itself and strips torch's local build tag
(`2.13.0+cpu` -> `2.13.0`: the CPU wheel on a laptop or CI and the CUDA wheel in the trainer image
are the same release). Usage: python scripts/write_lock.py PIP LOCKFILE
"""

import subprocess
import sys

HEADER = """\
# requirements.lock: every package of Sparring's environment (all extras), resolved for Linux
# and Python 3.11 by `make lock` on {date}. `make install`, .ci/run and the images install
# exactly these (`pip install --no-deps -r requirements.lock`, or as constraints in the images).
# To move to new versions: loosen or raise the bounds in pyproject.toml, `make lock`,
# `make test`, and commit the diff of this file with what changed in the measurements.
"""


def main(pip: str, lock_path: str) -> None:
    import datetime

    frozen = subprocess.run(
        [pip, "freeze", "--exclude-editable"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    lines = []
    for line in frozen:
        name = line.split("==")[0].split(" @ ")[0].strip().lower()
        if not line.strip() or name == "sparring":
            continue
        if " @ " in line:
            sys.exit(f"write_lock: {line!r} is not from a registry; install it by version")
        if name == "torch":
            line = line.split("+")[0]
        lines.append(line)
    with open(lock_path, "w") as fh:
        fh.write(HEADER.format(date=datetime.date.today().isoformat()))
        fh.write("\n".join(sorted(lines, key=str.lower)) + "\n")
    print(f"wrote {lock_path}: {len(lines)} packages")


if __name__ == "__main__":
    main(*sys.argv[1:])
