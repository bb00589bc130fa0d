"""One table for every phase (sparring.phases.table.PHASES): a phase that is not a row cannot run.

Checked from both ends: every component in components/ is a thin shell whose body runs the row
of its name (read from its source: imports, then `return table.run_task("<row>", locals())`),
and every task of the compiled code-duel and game DAGs is a row's component (the exit handler's
group aside), with each row that has a KFP task used by one of them. The `the_check_*` tests
plant a stray component and a missing row and see the checks name them.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from components import FUNCTIONS, make_components, row_of
from pipelines.common import config_line
from pipelines.selfplay import compile_pipeline
from sparring import tracking
from sparring.config import load_config
from sparring.errors import SparringError
from sparring.phases import table
from sparring.phases.table import PHASES

ROOT = Path(__file__).resolve().parents[2]
# One DAG of each shape: the code duel over two rounds (snapshot-first, then snapshot-next), with
# a warm start (which starts the manifest itself), and a game.
DAGS = {
    "selfplay": ("configs/smoke.yaml", ()),
    "selfplay-warm-start": ("configs/smoke.yaml", ("warm_start.steps=1",)),
    "game": ("configs/games/debate.yaml", ()),
}
EXIT_HANDLER_GROUP = re.compile(r"exit-handler-\d+")  # the DAG group finalize guards
KEYWORDS_ALLOWED = ({}, {"trainjob": "launch.run_phase"})  # the training components hand it down


def row_run_by(source: str) -> str | None:
    """The row a component function (its source) runs: its body is a docstring, imports, then
    `return table.run_task("<row>", locals())` (with `trainjob=launch.run_phase` for a training
    component); None for any other body."""
    (func,) = ast.parse(textwrap.dedent(source)).body
    body = func.body[1:] if ast.get_docstring(func) else func.body
    *imports, last = body
    if not all(isinstance(node, (ast.Import, ast.ImportFrom)) for node in imports):
        return None
    call = last.value if isinstance(last, ast.Return) else None
    if not isinstance(call, ast.Call) or ast.unparse(call.func) != "table.run_task":
        return None
    keywords = {kw.arg: ast.unparse(kw.value) for kw in call.keywords}
    if keywords not in KEYWORDS_ALLOWED or [ast.unparse(a) for a in call.args[1:]] != ["locals()"]:
        return None
    first = call.args[0]
    return first.value if isinstance(first, ast.Constant) else None


def components_not_running_their_row(functions: dict) -> list[str]:
    """'function: why' for each component whose body does not run the row of its name."""
    wrong = []
    for name, func in sorted(functions.items()):
        row = row_run_by(inspect.getsource(func))
        if row is None:
            wrong.append(f"{name}: its body does more than run a row (table.run_task)")
        elif row != row_of(name):
            wrong.append(f"{name}: runs row {row!r}, not the row of its name {row_of(name)!r}")
        elif row not in PHASES:
            wrong.append(f"{name}: runs {row!r}, which is no row of sparring.phases.table")
    return wrong


def component_functions_defined() -> set[str]:
    """Every function defined at the top of a module of components/ (but the package's own)."""
    return {
        node.name
        for path in (ROOT / "components").glob("*.py")
        if path.name != "__init__.py"
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef)
    }


def test_every_component_runs_a_row_of_the_phase_table():
    unregistered = sorted(component_functions_defined() - set(FUNCTIONS))
    assert not unregistered, f"functions in components/ not in components.FUNCTIONS: {unregistered}"
    wrong = components_not_running_their_row(FUNCTIONS)
    assert not wrong, "components that are not a thin shell of their row:\n" + "\n".join(wrong)
    with_task = {name for name, spec in PHASES.items() if spec.task is not None}
    shells = {row_of(name) for name in FUNCTIONS}
    assert shells == with_task, (
        f"rows with a KFP task but no component: {sorted(with_task - shells)}; "
        f"components of no such row: {sorted(shells - with_task)}"
    )
    idle = [name for name, spec in PHASES.items() if spec.task is None and spec.call is None]
    assert not idle, f"rows that nothing can run (neither a task nor a call): {idle}"


def dag_tasks(config: str, overrides: tuple[str, ...], folder: Path) -> dict[str, str]:
    """{task name: the component function its executor runs ("" for a group)} of the compiled
    pipeline of a config (`compile_pipeline`, the cluster build, as `sparring compile` writes)."""
    cfg = load_config(ROOT / config, list(overrides))
    ir = next(yaml.safe_load_all(compile_pipeline(cfg, folder / "p.yaml").read_text()))
    dags = [ir["root"]["dag"]] + [c["dag"] for c in ir["components"].values() if "dag" in c]
    executors = ir["deploymentSpec"]["executors"]
    found = {}
    for dag in dags:
        for name, task in dag["tasks"].items():
            executor = ir["components"][task["componentRef"]["name"]].get("executorLabel")
            args = executors[executor]["container"]["args"] if executor else []
            found[name] = args[args.index("--function_to_execute") + 1] if executor else ""
    return found


def tasks_without_a_row(tasks: dict[str, str]) -> list[str]:
    """'task: why' for each task that is not a row's component nor the exit handler's group."""
    wrong = []
    for name, function in sorted(tasks.items()):
        row = re.sub(r"-\d+$", "", name)  # the second task of a component: train-answerer-2
        if not function:
            if not EXIT_HANDLER_GROUP.fullmatch(name):
                wrong.append(f"{name}: a group other than the exit handler's")
        elif row not in PHASES:
            wrong.append(f"{name}: no row {row!r} in sparring.phases.table")
        elif row_of(function) != row:
            wrong.append(f"{name}: runs component {function}, not its row's")
    return wrong


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> dict[str, dict[str, str]]:
    return {
        dag: dag_tasks(config, overrides, tmp_path_factory.mktemp(dag))
        for dag, (config, overrides) in DAGS.items()
    }


@pytest.mark.parametrize("dag", DAGS)
def test_every_task_of_the_compiled_dags_is_a_row(compiled, dag):
    wrong = tasks_without_a_row(compiled[dag])
    assert not wrong, f"{dag}: DAG tasks that run no row of the phase table:\n" + "\n".join(wrong)


def test_every_row_with_a_task_is_in_a_dag(compiled):
    used = {re.sub(r"-\d+$", "", name) for tasks in compiled.values() for name in tasks}
    unused = sorted(name for name, spec in PHASES.items() if spec.task and name not in used)
    assert not unused, f"rows with a KFP task that no compiled DAG here runs: {unused}"


def test_a_name_without_a_row_cannot_run():
    with pytest.raises(SparringError, match="stray: no row of the phase table"):
        table.run_task("stray", {})
    with pytest.raises(SparringError, match="evaluate: runs only as a task of the KFP DAG"):
        table.run("evaluate", load_config(ROOT / "configs/smoke.yaml"), 1, {}, {})


STRAY = """
def stray(config_yaml: str, metrics: Output[Metrics]):
    from sparring.phases import evaluate

    evaluate.evaluate(config_yaml)
"""
SHELL = '''
def stray(config_yaml: str, metrics: Output[Metrics]):
    """A docstring is fine."""
    from sparring.phases import table

    return table.run_task("{row}", locals())
'''


def test_the_check_refuses_a_stray_component(monkeypatch):
    """A component that does its own work, or runs a row not its own or no row at all, is named;
    so is a component function the table has no row for (make_components refuses to build it)."""
    assert row_run_by(STRAY) is None
    assert row_run_by(SHELL.format(row="stray")) == "stray"
    assert row_run_by(SHELL.format(row="stray").replace("locals()", "{}")) is None

    def stray(config_yaml: str):
        from sparring.phases import table

        return table.run_task("evaluate", locals())

    assert components_not_running_their_row({"stray": stray}) == [
        "stray: runs row 'evaluate', not the row of its name 'stray'"
    ]
    monkeypatch.setitem(FUNCTIONS, "stray", stray)
    with pytest.raises(SparringError, match=r"no row in sparring.phases.table.PHASES: \['stray'\]"):
        make_components(load_config(ROOT / "configs/smoke.yaml"))


def test_the_check_refuses_a_dag_task_without_a_row(monkeypatch):
    tasks = {"snapshot-next-2": "snapshot_next", "exit-handler-1": "", "materialize": "warm_start"}
    assert tasks_without_a_row(tasks) == ["materialize: runs component warm_start, not its row's"]
    monkeypatch.delitem(PHASES, "snapshot-next")
    assert tasks_without_a_row(tasks) == [
        "materialize: runs component warm_start, not its row's",
        "snapshot-next-2: no row 'snapshot-next' in sparring.phases.table",
    ]


class Art(SimpleNamespace):
    """Stands in for a KFP artifact: .path, .uri, .metadata, log_metric."""

    def __init__(self, path):
        super().__init__(path=str(path), uri=f"s3://b/{Path(path).name}", metadata={})

    def log_metric(self, key, value):
        self.metadata[key] = value


def test_a_training_row_hands_the_trainjob_launcher_its_uris_and_paths(tmp_path, monkeypatch):
    """launcher "trainjob": the row's inputs as URIs, its outputs' local paths by their names in a
    phase folder (what the TrainJob uploads), the first output's URI as the staging place."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path}/mlflow.db")
    cfg = load_config(ROOT / "configs/smoke.yaml")
    names = ("data", "frozen_answerer", "init_model", "model", "tests", "frozen_solutions")
    art = {name: Art(tmp_path / name) for name in (*names, "metrics")}
    parent = tracking.start_parent_run(cfg, "kfp-1")
    args = {"config_yaml": config_line(cfg), "parent_run_id": parent, "round_index": 1,
            "phase": "r01-p01-generator", "launcher": "trainjob", **art}  # fmt: skip
    calls = []

    def launch(cfg, phase, round_index, **kwargs):
        calls.append((phase, round_index, kwargs))
        return {"world_size": 2.0}

    assert table.run_task("train-generator", args, trainjob=launch) is None
    uris = {name: f"s3://b/{name}" for name in ("data", "frozen_answerer", "init_model")}
    outputs = {"model": art["model"].path, "tests.jsonl": art["tests"].path,
               "frozen_solutions.jsonl": art["frozen_solutions"].path}  # fmt: skip
    assert calls == [
        ("train-generator", 1, {"phase_name": "r01-p01-generator", "inputs": uris,
                                "outputs": outputs, "output_uri": "s3://b/model"}),
    ]  # fmt: skip
    assert json.loads(Path(art["metrics"].path).read_text())["world_size"] == 2.0
    with pytest.raises(SparringError, match="train-generator: launcher trainjob, but its comp"):
        table.run_task("train-generator", args)
