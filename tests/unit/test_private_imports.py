"""No module of src/sparring imports another module's private names (a name starting with one
underscore, `from sparring.x import _foo`, inside a function too): a name another module needs is
that module's public name, so renaming or changing a private helper breaks nothing elsewhere.
Checked statically (the `ast` of every module; nothing imported, milliseconds).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"

# (importing file, imported name) pairs not yet fixed: none left
PENDING: set[tuple[str, str]] = set()


def _module_of(path: Path, src: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_from(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute name of the module an ImportFrom reads from (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def private_imports(src: Path) -> list[str]:
    """`file:line imports _name from module` for every import of a private name of another
    module under `src` (dunder names such as `__version__` are public)."""
    found = []
    for path in sorted(src.rglob("*.py")):
        module = _module_of(path, src)
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                home = _imported_from(node, module, path.name == "__init__.py")
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                # `import sparring.x._private_module`: a private module reached from outside
                home, names = "", [a.name.rsplit(".", 1)[-1] for a in node.names if "." in a.name]
            else:
                continue
            if home == module:
                continue
            for name in names:
                if name.startswith("_") and not name.startswith("__"):
                    rel = path.relative_to(src).as_posix()
                    if (rel, name) not in PENDING:
                        found.append(f"{rel}:{node.lineno} imports {name} from {home or 'a path'}")
    return found


def test_no_module_imports_another_modules_private_names():
    found = private_imports(SRC)
    assert not found, (
        "make the name public in its home module (rename it there and at every user): "
        + "; ".join(found)
    )


def test_the_pending_ones_are_still_pending():
    """An allow-listed import that has been fixed leaves the list."""
    tree_names = set()
    for rel in {rel for rel, _ in PENDING}:
        tree = ast.parse((SRC / rel).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                tree_names |= {(rel, a.name) for a in node.names}
    assert tree_names >= PENDING, f"fixed: take {PENDING - tree_names} off PENDING"


def test_the_check_catches_a_private_import(tmp_path):
    pkg = tmp_path / "sparring"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def _helper():\n    pass\n\n\nfrom sparring.a import _helper\n")
    (pkg / "sub" / "b.py").write_text(
        "from __future__ import annotations\n\n\ndef f():\n    from ..a import _helper\n"
    )
    (pkg / "sub" / "c.py").write_text("from sparring import __version__\nimport os.path\n")
    assert private_imports(tmp_path) == ["sparring/sub/b.py:5 imports _helper from sparring.a"]
