"""The code version a result names (sparring.backends.lineage.code_digest) covers the whole
library: an edit in any room changes it, wherever the module that computes it lives (until
2026-12-03 it hashed only src/sparring/backends, the folder lineage.py had moved to, so a study
could pair runs of different phases code as one version)."""

from __future__ import annotations

import shutil
from pathlib import Path

from sparring.backends import lineage

PACKAGE = Path(lineage.__file__).resolve().parents[1]


def test_the_digest_reads_the_whole_package():
    assert lineage.PACKAGE_ROOT == PACKAGE and (PACKAGE / "__init__.py").is_file()
    assert PACKAGE.name == "sparring"


def test_an_edit_in_any_room_is_another_version(tmp_path):
    copy = tmp_path / "sparring"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert lineage.source_digest(copy) == lineage.code_digest()
    for edited in ("phases/generator.py", "rewards/__init__.py", "experiments/study.py"):
        target = copy / edited
        original = target.read_text()
        target.write_text(original + "\n# an edit\n")
        assert lineage.source_digest(copy) != lineage.code_digest(), edited
        target.write_text(original)
    assert lineage.source_digest(copy) == lineage.code_digest()
