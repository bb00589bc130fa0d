"""Structure of the compiled KFP IR for the shipped configs (no server needed)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import yaml
from kfp import compiler
from kfp.dsl import pipeline_task

from pipelines import selfplay
from pipelines.common import MLFLOW_ENV, S3_ENV, fast_setters
from pipelines.selfplay import compile_pipeline
from sparring.config import load_config
from sparring.phases.schedule import plan_phases

TRAINING = ("train-answerer", "train-generator")
# The DAG's tasks that are phases of `plan_phases`, by component name (init_models, the
# snapshots, evaluate and select are pipeline plumbing outside the plan).
PLANNED = {
    "materialize": "materialize",
    "warm-start": "warm_start",
    "train-answerer": "answerer",
    "train-generator": "generator",
    "validate-tests": "validate",
}
ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs"  # the shipped configs, whatever the working directory
SELFPLAY_CONFIGS = sorted(
    str(p.relative_to(ROOT)) for p in CONFIGS.glob("*.yaml") if not load_config(p).game.name
)


def _compile(tmp_path, config, overrides=()):
    cfg = load_config(ROOT / config, list(overrides))  # config: relative to the repository
    path = compile_pipeline(cfg, tmp_path / "p.yaml")
    docs = list(yaml.safe_load_all(path.read_text()))
    assert len(docs) == 2, "IR + platform spec"
    return cfg, path, docs[0], docs[1]["platforms"]["kubernetes"]["deploymentSpec"]["executors"]


def _tasks(ir):
    """Every leaf task, from the root DAG and the groups in it (the exit handler's)."""
    dags = [ir["root"]["dag"]] + [c["dag"] for c in ir["components"].values() if "dag" in c]
    leaves = {}
    for dag in dags:
        for key, task in dag["tasks"].items():
            if "executorLabel" in ir["components"][task["componentRef"]["name"]]:
                assert key not in leaves, key
                leaves[key] = task
    return leaves


def _executor(ir, task):
    comp = ir["components"][task["componentRef"]["name"]]
    return comp["executorLabel"]


def _kind(task_key: str) -> str:
    return re.sub(r"-\d+$", "", task_key)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """Compile a shipped config once per module (the cluster configs unroll hundreds of tasks)."""
    cache = {}

    def get(config):
        if config not in cache:
            cache[config] = _compile(tmp_path_factory.mktemp("ir"), config)
        return cache[config]

    return get


@pytest.fixture(scope="module")
def cluster(compiled):
    return compiled("configs/cluster-qwen7b.yaml")


@pytest.fixture(scope="module")
def smoke(compiled):
    return compiled("configs/smoke.yaml")


def _display_names(ir):
    return sorted(t["taskInfo"]["name"] for t in _tasks(ir).values())


def test_smoke_task_names_per_round(smoke):
    cfg, _, ir, _ = smoke
    names = _display_names(ir)
    assert cfg.rounds == 2 and cfg.phase_schedule == "generator_answerer"
    for r in (1, 2):
        for label in ("train generator", "validate tests", "train answerer", "snapshot"):
            assert f"round {r} · {label}" in names
    assert {"materialize", "init models", "evaluate", "select & register"} <= set(names)
    assert "close the MLflow run" in names
    assert len(names) == 5 + 4 * cfg.rounds


def test_exit_task_closes_the_mlflow_run_whatever_happens(smoke):
    _, _, ir, _ = smoke
    fin = ir["root"]["dag"]["tasks"]["finalize"]
    assert fin["triggerPolicy"]["strategy"] == "ALL_UPSTREAM_TASKS_COMPLETED"
    assert fin["dependentTasks"] == ["exit-handler-1"]
    assert set(fin["inputs"]["parameters"]) == {
        "config_yaml",
        "parent_run_id",
        "kfp_run_id",
        "status",
    }
    assert set(ir["root"]["dag"]["tasks"]) == {"exit-handler-1", "finalize"}


def _param(task, name: str):
    """A task's constant parameter, or None when the task has no such input."""
    param = task["inputs"].get("parameters", {}).get(name)
    return param["runtimeValue"]["constant"] if param else None


def _phase_tasks(ir) -> list[tuple[int, str, str | None, str]]:
    """The DAG's planned tasks round by round, each as (round, kind, the phase label it seeds
    its draws with, task key). Asserts the order is the only one KFP can run them in: within a
    round each task depends on every one before it (a chain), and no task depends on a later
    round's. (Across rounds the next generator need not wait for the previous validation when
    it reads no bank; the plain runner's order is still a valid order of the DAG.)"""
    tasks = {k: t for k, t in _tasks(ir).items() if _kind(k) in PLANNED}
    before = {k: _upstream(ir, k) & set(tasks) for k in tasks}
    rounds = {k: int(_param(t, "round_index") or 0) for k, t in tasks.items()}
    order = sorted(tasks, key=lambda k: (rounds[k], len(before[k])))
    for i, k in enumerate(order):
        same_round = [j for j in order[:i] if rounds[j] == rounds[k]]
        assert set(same_round) <= before[k], f"{k}: not chained to {same_round}"
        assert before[k] <= set(order[:i]), f"{k}: depends on a later task"
    return [(rounds[k], PLANNED[_kind(k)], _param(tasks[k], "phase"), k) for k in order]


def _assert_dag_is_the_plan(cfg, ir) -> None:
    """The compiled DAG runs `plan_phases(cfg)`: the same phases in the same order, each
    training task seeded by its phase's identity (the label the plain runner passes too)."""
    plan = plan_phases(cfg)
    dag = _phase_tasks(ir)
    assert [(r, kind) for r, kind, _, _ in dag] == [(p.round, p.kind) for p in plan]
    labels = [(label, p.name) for (_, kind, label, _), p in zip(dag, plan, strict=True)]
    assert all(label == name for label, name in labels if label is not None), labels
    trained = [label for _, kind, label, _ in dag if kind in ("answerer", "generator")]
    assert None not in trained, "every training task gets its phase label"


# An empty set fails (the "none found" case below) rather than skipping the test.
@pytest.mark.parametrize("config", SELFPLAY_CONFIGS or [None])
def test_compiled_dag_is_plan_phases_for_every_shipped_config(compiled, config):
    assert config is not None, f"no shipped self-play config found in {CONFIGS}"
    cfg, _, ir, _ = compiled(config)
    _assert_dag_is_the_plan(cfg, ir)


def test_shipped_self_play_configs_are_found():
    assert {"configs/smoke.yaml", "configs/cluster-qwen7b.yaml"} <= set(SELFPLAY_CONFIGS), (
        f"shipped self-play configs under {CONFIGS}: {SELFPLAY_CONFIGS}"
    )


@pytest.mark.parametrize(
    "overrides",
    [
        ["steps.alternating=2"],
        ["steps.alternating=2", "phase_schedule=answerer_generator_answerer"],
        ["steps.alternating=1", "warm_start.steps=3", "rounds=3"],
        ["phase_schedule=answerer", "rounds=2"],  # the given tests alone: no generator phase
    ],
)
def test_compiled_dag_is_plan_phases_with_alternating_pairs(tmp_path, overrides):
    cfg, _, ir, _ = _compile(tmp_path, "configs/smoke.yaml", overrides)
    _assert_dag_is_the_plan(cfg, ir)


def test_cluster_schedule_has_three_training_phases_per_round(cluster):
    cfg, _, ir, _ = cluster
    assert cfg.phase_schedule == "answerer_generator_answerer" and cfg.steps.alternating == 20
    _assert_dag_is_the_plan(cfg, ir)
    names = _display_names(ir)
    assert f"round {cfg.rounds} · train answerer (final)" in names
    assert f"round {cfg.rounds + 1} · train answerer" not in names


@pytest.mark.parametrize("rounds", [1, 3])
@pytest.mark.parametrize("schedule", ["generator_answerer", "answerer_generator_answerer"])
def test_round_count_matches_config(tmp_path, rounds, schedule):
    _, _, ir, _ = _compile(
        tmp_path, "configs/smoke.yaml", [f"rounds={rounds}", f"phase_schedule={schedule}"]
    )
    cfg = load_config(
        ROOT / "configs/smoke.yaml", [f"rounds={rounds}", f"phase_schedule={schedule}"]
    )
    _assert_dag_is_the_plan(cfg, ir)
    kinds = [_kind(k) for k in _tasks(ir)]
    assert kinds.count("snapshot-first") == 1
    assert kinds.count("snapshot-next") == rounds - 1


@pytest.mark.parametrize(
    ("schedule", "producers"),
    [
        ("generator_answerer", ["train-generator", "train-generator-2"]),
        ("answerer", ["init-models", "init-models"]),  # no generator phase: the init model
    ],
)
def test_each_snapshot_carries_its_rounds_latest_generator(tmp_path, schedule, producers):
    _, _, ir, _ = _compile(tmp_path, "configs/smoke.yaml", [f"phase_schedule={schedule}"])
    tasks = _tasks(ir)
    snaps = sorted(k for k in tasks if _kind(k).startswith("snapshot-"))  # first, next
    sources = [tasks[k]["inputs"]["artifacts"]["generator"]["taskOutputArtifact"] for k in snaps]
    assert [s["producerTask"] for s in sources] == producers
    keys = {"train-generator": "model", "init-models": "generator"}
    assert all(s["outputArtifactKey"] == keys[_kind(s["producerTask"])] for s in sources)


def test_images_per_task(cluster):
    cfg, _, ir, _ = cluster
    execs = ir["deploymentSpec"]["executors"]
    for key, task in _tasks(ir).items():
        image = execs[_executor(ir, task)]["container"]["image"]
        want = (
            cfg.kubernetes.images.sandbox
            if _kind(key) == "validate-tests"
            else cfg.kubernetes.images.trainer
        )
        assert image == want, key
        cmd = " ".join(execs[_executor(ir, task)]["container"]["command"])
        assert "pip install" not in cmd, "no packages_to_install, no kfp install"


def test_mlx_backend_uses_mlx_image(tmp_path):
    cfg, _, ir, _ = _compile(tmp_path, "configs/smoke.yaml", ["backend=mlx"])
    execs = ir["deploymentSpec"]["executors"]
    images = {execs[_executor(ir, t)]["container"]["image"] for t in _tasks(ir).values()}
    assert images == {cfg.kubernetes.images.mlx, cfg.kubernetes.images.sandbox}


def test_gpu_on_training_tasks_only(cluster):
    cfg, _, ir, platform = cluster
    execs = ir["deploymentSpec"]["executors"]
    for key, task in _tasks(ir).items():
        res = execs[_executor(ir, task)]["container"].get("resources", {})
        if _kind(key) in TRAINING:
            assert res["accelerator"]["resourceType"] == "nvidia.com/gpu"
            assert res["accelerator"]["resourceCount"] == str(cfg.kubernetes.gpu.count) == "8"
            assert res["resourceMemoryLimit"] == cfg.kubernetes.train_memory
            sel = platform[_executor(ir, task)]["nodeSelector"]["labels"]
            assert sel["nvidia.com/gpu.product"] == cfg.kubernetes.gpu.accelerator
            assert sel["sparring.io/pool"] == "gpu"
            tol = platform[_executor(ir, task)]["tolerations"]
            assert tol == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        else:
            assert "accelerator" not in res, key
            assert res["resourceMemoryLimit"] == cfg.kubernetes.memory
            assert res["resourceCpuLimit"] == cfg.kubernetes.cpu


@pytest.mark.parametrize(
    "config",
    [
        "configs/local.yaml",
        "configs/cluster-qwen7b.yaml",
        "configs/cluster-multinode.yaml",
        "configs/games/debate.yaml",
    ],
)
def test_every_task_requests_cpu_and_memory_training_tasks_their_own(compiled, config):
    """Every executor of the IR requests CPU and memory (request = limit): the training tasks
    kubernetes.train_cpu and train_memory, every other task (the TrainJob launchers of
    trainer.nodes > 1 included: their nodes get train_cpu, tests/unit/test_cluster_spec.py)
    kubernetes.cpu and memory."""
    cfg, _, ir, _ = compiled(config)
    k8s = cfg.kubernetes
    execs = ir["deploymentSpec"]["executors"]
    in_task = k8s.trainer.nodes == 1
    trained = set()
    for key, task in _tasks(ir).items():
        res = execs[_executor(ir, task)]["container"].get("resources", {})
        training = in_task and (_kind(key) in (*TRAINING, "warm-start", "train-game"))
        cpu, memory = (k8s.train_cpu, k8s.train_memory) if training else (k8s.cpu, k8s.memory)
        assert res.get("resourceCpuRequest") == res.get("resourceCpuLimit") == cpu, key
        assert res.get("resourceMemoryRequest") == res.get("resourceMemoryLimit") == memory, key
        trained |= {_kind(key)} if training else set()
    assert trained == ({"train-game"} if cfg.game.name else set(TRAINING) if in_task else set())
    used = {_executor(ir, t) for t in _tasks(ir).values()}
    assert used == set(execs), "every executor is some task's: all of them were checked"


def test_smoke_has_no_gpu(smoke):
    _, _, ir, _ = smoke
    for ex in ir["deploymentSpec"]["executors"].values():
        assert "accelerator" not in ex["container"].get("resources", {})


def test_secrets_on_every_task_except_validation(cluster):
    cfg, _, ir, platform = cluster
    for key, task in _tasks(ir).items():
        spec = platform[_executor(ir, task)]
        assert spec["activeDeadlineSeconds"] == str(cfg.kubernetes.timeout_s)
        assert spec["securityContext"]["runAsNonRoot"] is True
        if _kind(key) == "validate-tests":
            assert "secretAsEnv" not in spec
            assert spec["podMetadata"]["labels"] == {"sparring.io/sandbox": "true"}
            assert spec["podMetadata"]["annotations"]["sparring.io/runtime-class"] == "gvisor"
            assert spec["nodeSelector"]["labels"] == {"sparring.io/pool": "sandbox"}
            assert spec["tolerations"][0]["key"] == "sparring.io/sandbox"
            continue
        assert "podMetadata" not in spec or "sparring.io/sandbox" not in spec["podMetadata"].get(
            "labels", {}
        )
        secrets = {
            s["secretName"]: [e["envVar"] for e in s["keyToEnv"]] for s in spec["secretAsEnv"]
        }
        assert secrets == {
            cfg.kubernetes.secrets.s3: list(S3_ENV),
            cfg.kubernetes.secrets.mlflow: list(MLFLOW_ENV),
        }, key


def test_retries_only_on_idempotent_tasks(cluster):
    cfg, _, ir, _ = cluster
    for key, task in _tasks(ir).items():
        retried = "retryPolicy" in task
        idempotent = _kind(key) in (
            "materialize", "validate-tests", "evaluate", "snapshot-first", "snapshot-next"
        )  # fmt: skip
        assert retried == idempotent, key
        if retried:
            assert task["retryPolicy"]["maxRetryCount"] == cfg.kubernetes.retries


def test_cluster_run_id_placeholder_and_caching(cluster, smoke):
    _, _, ir, _ = cluster
    mat = _tasks(ir)["materialize"]
    assert mat["inputs"]["parameters"]["kfp_run_id"]["runtimeValue"]["constant"] == (
        "{{$.pipeline_job_uuid}}"
    )
    assert mat["cachingOptions"] == {}  # caching off: reads the bank and creates the MLflow run
    assert _tasks(ir)["init-models"]["cachingOptions"] == {}
    assert _tasks(ir)["train-generator"]["cachingOptions"] == {"enableCache": True}


def test_config_is_one_line_default(cluster):
    cfg, path, ir, _ = cluster
    default = ir["root"]["inputDefinitions"]["parameters"]["config_yaml"]["defaultValue"]
    assert "\n" not in default
    assert yaml.safe_load(default)["rounds"] == cfg.rounds
    header = path.read_text().split("components:")[0]
    assert all(line.startswith("#") for line in header.splitlines() if line)


def test_same_config_same_bytes(tmp_path):
    # one alternating pair per round instead of 20 keeps the three compiles cheap
    cfg = load_config(ROOT / "configs/cluster-qwen7b.yaml", ["steps.alternating=1"])
    a = compile_pipeline(cfg, tmp_path / "a.yaml").read_bytes()
    b = compile_pipeline(cfg, tmp_path / "b.yaml").read_bytes()
    assert a == b
    other = compile_pipeline(
        load_config(ROOT / "configs/cluster-qwen7b.yaml", ["steps.alternating=1", "seed=1"]),
        tmp_path / "c.yaml",
    )
    assert other.read_bytes() != a


def test_compile_skips_kfps_stack_walk_and_writes_the_same_ir(tmp_path, monkeypatch):
    """compile_pipeline builds under fast_setters(): no inspect.stack() call (which walks every
    frame's source and sys.modules), and the same bytes as KFP's own setters write."""
    stack_walks = []
    real_stack = inspect.stack
    monkeypatch.setattr(inspect, "stack", lambda *a: stack_walks.append(1) or real_stack(*a))
    cfg = load_config(ROOT / "configs/cluster-qwen7b.yaml", ["steps.alternating=1", "rounds=2"])
    compiler.Compiler().compile(selfplay._build_pipeline(cfg, False), str(tmp_path / "kfp.yaml"))
    assert stack_walks, "KFP's setters walk the stack (else this test checks nothing)"
    stack_walks.clear()
    fast = compile_pipeline(cfg, tmp_path / "fast.yaml")
    assert not stack_walks, f"compile_pipeline walked the stack {len(stack_walks)} times"
    assert fast.read_bytes() == (tmp_path / "kfp.yaml").read_bytes()
    assert pipeline_task.inspect is inspect, "the real inspect module is back after a compile"


def test_fast_setters_name_the_setter_and_restore_inspect():
    """KFP's error for a setter on a task without a container still names that setter."""

    def set_cpu_limit(task):  # a setter's frame, as KFP's own setters call it
        pipeline_task.PipelineTask._ensure_container_spec_exists(task)

    no_container = type("Task", (), {"container_spec": None})()
    with pytest.raises(RuntimeError, match="boom"), fast_setters():
        with pytest.raises(ValueError, match=r"^set_cpu_limit can only be used on single-step"):
            set_cpu_limit(no_container)
        assert pipeline_task.inspect is not inspect, "fast_setters is in effect"
        raise RuntimeError("boom")
    assert pipeline_task.inspect is inspect, "restored after an exception too"


def _upstream(ir, key: str) -> set[str]:
    """Every task `key` depends on, directly or through others (leaf tasks of one DAG)."""
    tasks = _tasks(ir)
    seen: set[str] = set()
    todo = list(tasks[key].get("dependentTasks", []))
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo += tasks[k].get("dependentTasks", [])
    return seen


@pytest.mark.parametrize("schedule", ["generator_answerer", "answerer_generator_answerer"])
def test_warm_start_task_feeds_round_one(tmp_path, schedule):
    cfg, _, ir, platform = _compile(
        tmp_path,
        "configs/cluster-qwen7b.yaml",
        ["warm_start.steps=60", f"phase_schedule={schedule}", "steps.alternating=1"],
    )
    tasks = _tasks(ir)
    assert "warm-start" in tasks
    warm = tasks["warm-start"]
    assert warm["taskInfo"]["name"] == "warm start (SFT answerer)"
    assert {"init-models", "materialize"} <= _upstream(ir, "warm-start")
    # round 1's first answerer consumer starts from (or attacks) the warm-started model
    first = "train-answerer" if schedule == "answerer_generator_answerer" else "train-generator"
    model_in = "init_model" if first == "train-answerer" else "frozen_answerer"
    src = tasks[first]["inputs"]["artifacts"][model_in]["taskOutputArtifact"]
    assert src == {"producerTask": "warm-start", "outputArtifactKey": "model"}
    for key in tasks:
        if _kind(key) in ("train-answerer", "train-generator", "evaluate", "select"):
            assert "warm-start" in _upstream(ir, key), key
    # the manifest starts with the warm start: every round uses snapshot_next
    kinds = [_kind(k) for k in tasks]
    assert kinds.count("snapshot-first") == 0
    assert kinds.count("snapshot-next") == cfg.rounds
    snap = tasks["snapshot-next"]["inputs"]["artifacts"]["previous"]["taskOutputArtifact"]
    assert snap == {"producerTask": "warm-start", "outputArtifactKey": "snapshots"}
    # Kubernetes settings of a training task
    res = ir["deploymentSpec"]["executors"][_executor(ir, warm)]["container"]["resources"]
    assert res["accelerator"]["resourceCount"] == str(cfg.kubernetes.gpu.count)
    assert res["resourceMemoryLimit"] == cfg.kubernetes.train_memory
    spec = platform[_executor(ir, warm)]
    assert spec["activeDeadlineSeconds"] == str(cfg.kubernetes.timeout_s)
    assert {s["secretName"] for s in spec["secretAsEnv"]} == {
        cfg.kubernetes.secrets.s3,
        cfg.kubernetes.secrets.mlflow,
    }
    assert "retryPolicy" not in warm


def test_no_warm_start_task_by_default(smoke):
    _, _, ir, _ = smoke
    assert "warm-start" not in _tasks(ir)


def test_warm_start_with_mlx_is_refused_at_compile_time(tmp_path):
    from sparring.errors import SparringError

    with pytest.raises(SparringError, match=r"warm_start\.steps"):
        _compile(tmp_path, "configs/smoke.yaml", ["backend=mlx", "warm_start.steps=5"])


@pytest.fixture(scope="module")
def multinode(compiled):
    return compiled("configs/cluster-multinode.yaml")


def _launcher(task) -> str | None:
    param = task["inputs"]["parameters"].get("launcher")
    return param["runtimeValue"]["constant"] if param else None


def test_multinode_training_tasks_create_trainjobs_and_hold_no_gpu(multinode):
    cfg, _, ir, platform = multinode
    assert cfg.kubernetes.trainer.nodes == 2
    execs = ir["deploymentSpec"]["executors"]
    training = {k: t for k, t in _tasks(ir).items() if _kind(k) in TRAINING}
    _assert_dag_is_the_plan(cfg, ir)
    planned = [p for p in plan_phases(cfg) if p.kind in ("answerer", "generator")]
    assert len(training) == len(planned)
    for key, task in _tasks(ir).items():
        if _kind(key) in TRAINING:
            assert _launcher(task) == "trainjob", key
            assert task["taskInfo"]["name"].endswith("· TrainJob 2x8")
        res = execs[_executor(ir, task)]["container"].get("resources", {})
        assert "accelerator" not in res, key  # the TrainJob's nodes hold the GPUs
    for task in training.values():
        res = execs[_executor(ir, task)]["container"]["resources"]
        assert res["resourceMemoryLimit"] == cfg.kubernetes.memory
        assert "nodeSelector" not in platform[_executor(ir, task)]


def test_one_node_configs_and_local_runs_train_in_the_task(cluster, tmp_path):
    _, _, ir, _ = cluster
    for key, task in _tasks(ir).items():
        if _kind(key) in TRAINING:
            assert _launcher(task) == "task", key
    from pipelines.selfplay import build_pipeline

    # one alternating pair per round instead of 20: the launcher, not the size, is under test
    cfg = load_config(ROOT / "configs/cluster-multinode.yaml", ["steps.alternating=1"])
    from kfp import compiler

    path = tmp_path / "local.yaml"
    compiler.Compiler().compile(build_pipeline(cfg, local=True), package_path=str(path))
    local_ir = next(yaml.safe_load_all(path.read_text()))
    launchers = {_launcher(t) for k, t in _tasks(local_ir).items() if _kind(k) in TRAINING}
    assert launchers == {"task"}  # kfp.local ignores cluster settings, TrainJobs included


def test_fuzz_generator_is_a_light_task_in_its_pod_the_answerer_still_trains(tmp_path):
    """generator_mode fuzz (arm R of issue 73): the DAG is still the plan, but the generator's
    task draws tests and trains nothing, so even where the answerer's phases become TrainJobs
    (trainer.nodes 2) it runs in its own pod with a light task's CPU and memory and no GPU."""
    overrides = ["generator_mode=fuzz", "steps.alternating=0", "rounds=2"]
    cfg, _, ir, _ = _compile(tmp_path, "configs/cluster-multinode.yaml", overrides)
    _assert_dag_is_the_plan(cfg, ir)
    execs = ir["deploymentSpec"]["executors"]
    kinds = {"train-generator": 0, "train-answerer": 0}
    for key, task in _tasks(ir).items():
        kind = _kind(key)
        if kind not in kinds:
            continue
        kinds[kind] += 1
        res = execs[_executor(ir, task)]["container"].get("resources", {})
        assert "accelerator" not in res, key
        if kind == "train-generator":
            assert _launcher(task) == "task", key
            assert task["taskInfo"]["name"].endswith("· draw tests (fuzz)"), key
            assert res["resourceCpuLimit"] == cfg.kubernetes.cpu, key
            assert res["resourceMemoryLimit"] == cfg.kubernetes.memory, key
        else:
            assert _launcher(task) == "trainjob", key
    plan = [p.kind for p in plan_phases(cfg)]
    assert kinds == {k: plan.count(k.removeprefix("train-")) for k in kinds}
    assert kinds["train-generator"] == 2
