"""A stand-in `sparring` for Makefile tests: a venv folder whose `bin/sparring` writes down its
arguments, one JSON list a line, instead of running anything."""

from __future__ import annotations

import sys
from pathlib import Path


def stand_in_venv(tmp_path: Path) -> tuple[Path, Path]:
    """(the venv to pass as VENV=, the file its `sparring` writes its calls to)."""
    venv, calls = tmp_path / "venv", tmp_path / "calls.jsonl"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    (venv / ".installed").touch()  # nothing to install
    fake = venv / "bin" / "sparring"
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    fake.chmod(0o755)
    return venv, calls
