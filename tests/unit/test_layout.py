"""The layout's rules, checked statically (the `ast` of every module of the three first-party
packages: src/sparring, and the KFP shells pipelines/ and components/ at the repository's root;
nothing imported, milliseconds): no import cycle between their modules (every import counts); the
shells sit on the library, not under it (pipelines -> components -> sparring); the pure-logic
modules (and the sandbox image's path) import no heavy framework, directly or through another
first-party module; a module over 500 lines says in its first lines why it is one module; nothing
outside sparring.backends branches on the backend's name (but the named exceptions); a function
of phases/ or evaluation/ imports nothing inside itself but a heavy framework, or with a comment
on the line saying why (the phase table and the KFP tasks import each phase when it runs).

For heavy frameworks, imports inside functions (lazy on purpose) and under `if TYPE_CHECKING:`
are not counted; for cycles every import counts.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the first-party packages, each a folder whose name is the package's
PACKAGES = (ROOT / "src" / "sparring", ROOT / "pipelines", ROOT / "components")

HEAVY = {
    "torch", "transformers", "trl", "peft", "accelerate", "datasets", "kfp", "mlflow", "boto3",
    "botocore", "mlx", "mlx_lm", "matplotlib", "numpy",
}  # fmt: skip
PURE = (
    "sparring.config", "sparring.errors", "sparring.problems", "sparring.problems.prompts",
    "sparring.rewards", "sparring.problems.trivial", "sparring.backends.budget",
    "sparring.progress",
    # a phase's cost figures; choosing among sampled answers by tests
    "sparring.tracking.resources", "sparring.evaluation.choose",
    # the evaluation's text, the scoring of one model's answers, what a run's evaluation reads
    "sparring.evaluation.report_markdown", "sparring.evaluation.answer_scores",
    "sparring.evaluation.run_inputs", "sparring.experiments.sizing_oracle",
    "sparring.problems.programs",
    "sparring.sandbox.limits", "sparring.sandbox.oracle",
    "sparring.backends", "sparring.backends.base", "sparring.evaluation.learning",
    "sparring.evaluation.hacking", "sparring.phases.zone",
    "sparring.engine.core", "sparring.engine.credit", "sparring.engine.arena",
    "sparring.engine.game", "sparring.engine.local", "sparring.games.registry",
    "sparring.games.debate",
    "sparring.games.judging",
    "sparring.games.elo_arena",
    "sparring.games.refine_loop",
    "sparring.games.negotiation",
    "sparring.games.dataset_rl",
    "sparring.games.red_blue",
    "sparring.games.proposer_solver",
    # the TrainJob a phase becomes and the distributed recipe; ranks: imported by the generator
    "sparring.cluster.trainjob", "sparring.distributed.recipes", "sparring.distributed.ranks",
    "sparring.cluster.kube", "sparring.cluster.wait",
    # the sandbox image ships no ML stack: what its validate task imports must not need one
    "sparring.phases.validate", "sparring.phases.kfp_io", "sparring.sandbox",
    # one of each: the phase table and its rows' KFP tasks (the sandbox image's validate task
    # imports both), the answerer sampler, backend-neutral text helpers, the bank
    "sparring.phases.table", "sparring.phases.kfp_tasks", "sparring.backends.sampler",
    "sparring.backends.text",
    "sparring.rewards.bank",
    "sparring.backends.builtins",
    "sparring.phases.schedule",
    # the learning canary's problem families and its calibration summaries
    "sparring.problems.families", "sparring.problems.families.base",
    "sparring.problems.families.spec",
    "sparring.problems.families.catalog", "sparring.evaluation.calibration",
    # the curriculum coach's rule
    "sparring.problems.coach",
)  # fmt: skip
# The phase functions every runner dispatches; only the phase table and its rows' KFP tasks call
# them (they alone know their argument order). Names only: evaluate is every evaluator's name.
TABLE_PHASES = (
    "train_answerer", "train_generator", "validate_into", "materialize", "warm_start",
    "materialize_carrying_bank", "init_models", "add_snapshot", "select_and_register",
    "train_game", "evaluate_game", "select_game",
)  # fmt: skip
# Each layer imports only itself and the layers before it: the shells sit on the library.
LAYERS = ("sparring", "components", "pipelines")
# The one upward import: the command line hands the DAG (pipelines/) to the local runner and the
# compiler (lazily; it puts the checkout's root on sys.path for it); the library never imports it.
UPWARD_ALLOWED = {
    ("sparring.cli.pipeline", "pipelines"),
    ("sparring.cli.pipeline", "pipelines.selfplay"),
}
# The rooms of src/sparring (its folders and the modules at its root), top floor first: a room
# imports only rooms on floors below its own (every import counts, lazy and TYPE_CHECKING ones
# too). Rooms on one floor import neither each other nor anything above.
FLOORS = (
    ("cli",),
    ("plain_runner", "local_run"),
    ("experiments", "recurring", "cluster"),
    ("phases",),
    ("serving", "games"),
    ("evaluation",),
    ("backends",),
    ("distributed", "tracking", "engine"),
    ("config",),
    ("rewards",),
    ("problems",),
    ("sandbox", "storage"),
    ("atomic", "retrying", "progress", "records"),
    ("errors",),
)
# What only the command line may import: experiments on Sparring, not Sparring.
CLI_ONLY = ("sparring.experiments",)
ROOT_MODULES_MAX = 8  # modules loose at src/sparring's root (besides __init__.py)
# Modules outside sparring.backends that may compare a backend's name, and why.
BACKEND_BRANCH_ALLOWED = {
    "sparring.config.checks": "config validation: what each backend supports",
    "components": "the component image per backend (image_for)",
    "pipelines.selfplay": "the compile-time error: the warm start runs on torch only",
}
MAX_LINES = 500
HARD_MAX_LINES = 750  # not even with a 'Why one module'
TOP_LINES = 10  # "at its top": where a reader opening the file sees it


def module_files(packages: tuple[Path, ...] = PACKAGES) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the given package folders."""
    out = {}
    for package in packages:
        for path in sorted(package.rglob("*.py")):
            parts = list(path.relative_to(package.parent).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported (not in functions, not TYPE_CHECKING)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, (ast.Try, ast.With)):
                visit(node.body)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return found


def import_graph(
    packages: tuple[Path, ...] = PACKAGES, everywhere: bool = False
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(first-party module -> first-party modules it imports at module level, module -> the
    top-level names of the other packages it imports at module level); with `everywhere`, the
    imports inside functions and under TYPE_CHECKING too. A package importing its own
    submodules in __init__ is the usual Python layout, not a cycle: the implicit import of a
    module's parent packages is left out here (`ancestors` adds it where it matters)."""
    modules = module_files(packages)
    first_party = {package.name for package in packages}
    edges: dict[str, set[str]] = {name: set() for name in modules}
    external: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text())
        nodes = (
            [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
            if everywhere
            else _top_level_imports(tree)
        )
        for node in nodes:
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parent, base] if base else parent)
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                if target.split(".")[0] not in first_party:
                    external[name].add(target.split(".")[0])
                    continue
                while target and target not in modules:  # `from pkg import name`: the module
                    target = target.rpartition(".")[0]
                # a package is imported before its submodules anyway: not an edge of its own
                if target and target != name and not name.startswith(target + "."):
                    edges[name].add(target)
    return edges, external


def ancestors(module: str) -> list[str]:
    """The packages whose __init__ runs before `module` (sparring.a.b -> sparring.a)."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(2, len(parts))]


def find_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every elementary cycle found by a depth-first search, each once, as a closed path."""
    cycles, seen = [], set()

    def walk(node: str, path: list[str]) -> None:
        for nxt in sorted(edges.get(node, ())):
            if nxt == path[0]:
                key = frozenset(path)
                if key not in seen:
                    seen.add(key)
                    cycles.append([*path, nxt])
            elif nxt not in path and nxt > path[0]:  # each cycle from its smallest member
                walk(nxt, [*path, nxt])

    for start in sorted(edges):
        walk(start, [start])
    return cycles


def heavy_imports(module: str, edges: dict[str, set[str]], external: dict[str, set[str]]):
    """{heavy package: the chain of modules through which `module` imports it}."""
    found: dict[str, list[str]] = {}
    stack, chains = [module], {module: [module]}
    while stack:
        current = stack.pop()
        for package in sorted(external.get(current, set()) & HEAVY):
            found.setdefault(package, chains[current])
        for nxt in sorted({*edges.get(current, ()), *ancestors(current)}):
            if nxt not in chains:
                chains[nxt] = [*chains[current], nxt]
                stack.append(nxt)
    return found


def upward_imports(edges: dict[str, set[str]]) -> list[str]:
    """`module -> target` for each import of a later layer (LAYERS) not in UPWARD_ALLOWED."""
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    return [
        f"{module} -> {target}"
        for module, targets in sorted(edges.items())
        for target in sorted(targets)
        if rank[target.split(".")[0]] > rank[module.split(".")[0]]
        and (module, target) not in UPWARD_ALLOWED
    ]


def test_no_import_cycle():
    """Counting every import, lazy and TYPE_CHECKING ones too: a lazy import that closes a
    cycle still ties two modules into one. Covers pipelines/ and components/ as well as src/."""
    edges = import_graph(everywhere=True)[0]
    assert {name.split(".")[0] for name in edges} == set(LAYERS), "a package folder was not read"
    cycles = find_cycles(edges)
    assert not cycles, "import cycles (move the shared part into a module both import):\n" + (
        "\n".join(" -> ".join(c) for c in cycles)
    )


@pytest.mark.parametrize("module", PURE)
def test_pure_modules_import_no_heavy_framework(module):
    edges, external = import_graph()
    assert module in edges, f"{module}: no such module (update PURE in {Path(__file__).name})"
    heavy = heavy_imports(module, edges, external)
    assert not heavy, "; ".join(
        f"{module} imports {pkg} at module level via {' -> '.join(chain)}: import it inside "
        "the function that needs it"
        for pkg, chain in heavy.items()
    )


def test_long_modules_say_why_they_are_one():
    long = []
    for name, path in module_files().items():
        text = path.read_text()
        top = "\n".join(text.splitlines()[:TOP_LINES])
        if text.count("\n") > MAX_LINES and "why one module" not in top.lower():
            long.append(f"{name} ({text.count(chr(10))} lines)")
    assert not long, (
        f"over {MAX_LINES} lines without 'Why one module: ...' in the first {TOP_LINES} lines: "
        f"{long}"
    )


# A phase reads as its steps: no function of the phases or of the evaluation is longer than this,
# from its `def` to its last line; a longer one is doing several jobs that want names
STEP_MAX_LINES = 60
STEP_PACKAGES = ("phases", "evaluation")


def long_functions(folder: Path, limit: int = STEP_MAX_LINES) -> list[str]:
    """'file:function (N lines)' for every function under `folder` longer than `limit`."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    found.append(f"{path.relative_to(folder)}:{node.name} ({n} lines)")
    return found


@pytest.mark.parametrize("package", STEP_PACKAGES)
def test_phases_and_evaluation_read_as_steps(package):
    long = long_functions(ROOT / "src" / "sparring" / package)
    assert not long, (
        f"functions over {STEP_MAX_LINES} lines (name their steps, each a function): {long}"
    )


def test_the_step_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(STEP_MAX_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n")
    found = long_functions(tmp_path)
    assert len(found) == 1 and ":long (61 lines)" in found[0], found


# the phase table and the KFP tasks import each phase when it runs (a component imports only
# its own phase: the sandbox image that runs validate-tests ships no ML stack)
DISPATCHERS = {"phases/table.py", "phases/kfp_tasks.py"}


def lazy_imports(folder: Path, skip: set[str] = frozenset()) -> list[str]:
    """'file:line module' for every import inside a function under `folder` that is neither
    of a heavy framework nor explained by a comment on its line (a step's imports sit at the
    top of its module: issue 83)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        rel = path.relative_to(folder.parent).as_posix()
        if rel in skip:
            continue
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)):
                    continue
                module = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                if (module or "").split(".")[0] in HEAVY or "#" in lines[node.lineno - 1]:
                    continue
                found.append(f"{rel}:{node.lineno} {module}")
    return found


@pytest.mark.parametrize("package", STEP_PACKAGES)
def test_phases_and_evaluation_import_at_the_top(package):
    lazy = lazy_imports(ROOT / "src" / "sparring" / package, DISPATCHERS)
    assert not lazy, f"imports inside functions (move them to the module's top): {lazy}"


def test_the_import_check_sees_a_lazy_import(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "m.py").write_text(
        "def f():\n    import json\n    from torch import nn\n"
        "    from sparring import storage  # why it waits\n    return json\n"
    )
    assert lazy_imports(tmp_path / "pkg") == ["pkg/m.py:2 json"]


def test_no_module_is_over_the_hard_cap():
    """Even a module that says why it is one stops at HARD_MAX_LINES: past it, it holds two."""
    over = {
        name: path.read_text().count("\n")
        for name, path in module_files().items()
        if path.read_text().count("\n") > HARD_MAX_LINES
    }
    assert not over, f"modules over {HARD_MAX_LINES} lines (split them by concern): {over}"


def test_layers_import_downward():
    """pipelines -> components -> sparring, counting lazy imports: the library does not reach
    up into the KFP shells, nor the components into the DAG (but UPWARD_ALLOWED)."""
    upward = upward_imports(import_graph(everywhere=True)[0])
    assert not upward, f"imports of a higher layer (order: {' <- '.join(LAYERS)}): {upward}"


def test_only_backends_branch_on_the_backend_name():
    """Phases, evaluation, games, the CLI, the components and the DAG ask
    `backends.get(cfg.backend)`; BACKEND_BRANCH_ALLOWED names the exceptions and why."""
    offenders = []
    for name, path in module_files().items():
        if name.startswith("sparring.backends") or name in BACKEND_BRANCH_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Constant) and c.value in ("mlx", "torch")
                for c in [node.left, *node.comparators]
            ):
                offenders.append(f"{name}:{node.lineno}")
    assert not offenders, f"backend branches outside sparring.backends: {offenders}"


def test_only_the_phase_table_calls_the_phases():
    """The components, the plain runner, `sparring phase` and the TrainJob entry dispatch from
    sparring.phases.table; a call of a phase function anywhere else re-lists its arguments.
    (The DAG in pipelines/ calls components of the same names: tasks, not phase functions.)"""
    offenders = []
    allowed = {
        "sparring.phases.table", "sparring.phases.kfp_tasks",  # the table's rows
        "sparring.phases.materialize",  # carrying the bank
    }  # fmt: skip
    for name, path in module_files().items():
        if name in allowed or name.startswith("pipelines"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if called in TABLE_PHASES:
                    offenders.append(f"{name}:{node.lineno} {called}")
    assert not offenders, f"phases called outside sparring.phases.table: {offenders}"


def test_the_checks_catch_what_they_check(tmp_path):
    """A cycle and a heavy import through a sibling are found; a lazy import is no edge."""
    pkg = tmp_path / "sparring"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from sparring import b\n")
    (pkg / "b.py").write_text("import torch\n\ndef f():\n    from sparring import a\n")
    (pkg / "c.py").write_text("from sparring.b import f\nfrom sparring import a\n")
    edges, external = import_graph((pkg,))
    assert find_cycles(edges) == []  # b -> a is lazy: no module-level cycle
    assert find_cycles(import_graph((pkg,), everywhere=True)[0]) == [
        ["sparring.a", "sparring.b", "sparring.a"]
    ]  # counting every import, it is one
    (pkg / "b.py").write_text("import torch\nfrom sparring import c\n")
    edges, external = import_graph((pkg,))
    assert find_cycles(edges) == [
        ["sparring.a", "sparring.b", "sparring.c", "sparring.a"],
        ["sparring.b", "sparring.c", "sparring.b"],
    ]
    assert heavy_imports("sparring.a", edges, external) == {"torch": ["sparring.a", "sparring.b"]}


def test_the_checks_read_the_shells(tmp_path):
    """Across the three packages: the old knot of pipelines/ (game.py imported selfplay.py's
    helpers, selfplay.py imported game.py inside a function) is a cycle, and a library module
    importing a component is an upward import."""
    packages = (tmp_path / "src" / "sparring", tmp_path / "pipelines", tmp_path / "components")
    for package in packages:
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("")
    (tmp_path / "components" / "__init__.py").write_text("from sparring import config\n")
    (tmp_path / "src" / "sparring" / "config.py").write_text("")
    (tmp_path / "pipelines" / "selfplay.py").write_text(
        "from components import make_components\n\n"
        "def build_pipeline(cfg):\n    from pipelines.game import build_game_pipeline\n"
    )
    (tmp_path / "pipelines" / "game.py").write_text(
        "def build_game_pipeline(cfg):\n    from pipelines.selfplay import make_components\n"
    )
    edges = import_graph(packages, everywhere=True)[0]
    assert find_cycles(edges) == [["pipelines.game", "pipelines.selfplay", "pipelines.game"]]
    assert upward_imports(edges) == []
    (tmp_path / "src" / "sparring" / "config.py").write_text("def f():\n    import components\n")
    edges = import_graph(packages, everywhere=True)[0]
    assert upward_imports(edges) == ["sparring.config -> components"]
    assert find_cycles(edges) == [
        ["components", "sparring.config", "components"],
        ["pipelines.game", "pipelines.selfplay", "pipelines.game"],
    ]


def room_of(module: str) -> str:
    """sparring.problems.families.sets -> problems; sparring.storage -> storage."""
    return module.split(".")[1]


def rooms_graph(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """Room -> the other rooms of src/sparring it imports."""
    rooms: dict[str, set[str]] = {}
    for module, targets in edges.items():
        if module.startswith("sparring.") and module.count(".") >= 1:
            rooms.setdefault(room_of(module), set()).update(
                room_of(t) for t in targets if t.startswith("sparring.") and t != "sparring"
            )
    return {room: targets - {room} for room, targets in rooms.items()}


def rooms_importing_up(rooms: dict[str, set[str]]) -> list[str]:
    """`room -> room` for every import of a room on the same floor or a higher one."""
    floor = {room: i for i, names in enumerate(FLOORS) for room in names}
    return [
        f"{room} -> {target}"
        for room, targets in sorted(rooms.items())
        for target in sorted(targets)
        if floor[target] <= floor[room]
    ]


def test_every_room_imports_only_floors_below():
    """The import contract of the rooms (import-linter's layers, checked here from the `ast`):
    no import runs back up and no two rooms import each other, so a later change cannot quietly
    tie two concerns into one."""
    rooms = rooms_graph(import_graph(everywhere=True)[0])
    listed = {room for names in FLOORS for room in names}
    assert set(rooms) == listed, (
        f"rooms not on a floor: {sorted(set(rooms) - listed)}; gone: {sorted(listed - set(rooms))}"
        f" (place each in FLOORS of {Path(__file__).name})"
    )
    up = rooms_importing_up(rooms)
    assert not up, "imports that run back up (move the shared part down):\n" + "\n".join(up)


def test_only_the_cli_imports_the_experiments():
    edges = import_graph(everywhere=True)[0]
    wrong = [
        f"{module} -> {target}"
        for module, targets in sorted(edges.items())
        for target in sorted(targets)
        if target.startswith(CLI_ONLY)
        and module.startswith("sparring.")
        and not module.startswith(("sparring.cli", *CLI_ONLY))
    ]
    assert not wrong, "the library imports the experiments package:\n" + "\n".join(wrong)


def test_few_modules_loose_at_the_root():
    loose = sorted(
        p.name for p in (ROOT / "src" / "sparring").glob("*.py") if p.name != "__init__.py"
    )
    assert len(loose) <= ROOT_MODULES_MAX, f"{len(loose)} modules at src/sparring's root: {loose}"


def test_the_rooms_contract_catches_an_import_back_up():
    """The contract bites: a planted import of a higher room, or of the experiments, fails it."""
    planted = {"sparring.problems.x": {"sparring.phases.table"}, "sparring.phases.table": set()}
    assert rooms_importing_up(rooms_graph(planted)) == ["problems -> phases"]
    both = {
        "sparring.config.a": {"sparring.tracking.b"},
        "sparring.tracking.b": {"sparring.config.a"},
    }
    assert rooms_importing_up(rooms_graph(both)) == ["config -> tracking"]
