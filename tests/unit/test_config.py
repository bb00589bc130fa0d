"""Config validation: every shipped config loads; bad input gives one line naming the field."""

import subprocess
import sys
from pathlib import Path

import pytest

from sparring import config as cfgmod
from sparring.config import ConfigError, from_dict, load_config

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "configs").glob("*.yaml"))


def test_there_are_smoke_local_and_cluster_configs():
    names = {p.stem for p in SHIPPED}
    assert {"smoke", "local"} <= names
    assert any(n.startswith("cluster") for n in names)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_shipped_config_validates(path):
    cfg = load_config(path)
    assert cfg.rounds >= 1
    # round trip: the resolved config validates to the same object
    assert from_dict(cfgmod.to_dict(cfg)) == cfg


def test_smoke_uses_tiny_model_and_local_uses_smollm2():
    assert load_config(ROOT / "configs/smoke.yaml").models.answerer.name == "tiny-random"
    assert load_config(ROOT / "configs/local.yaml").models.answerer.name == "smollm2-135m"


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        ({"rounds": 0}, "rounds: 0 is too small; must be >= 1"),
        ({"roundz": 2}, "roundz: unknown key at the top level; did you mean 'rounds'?"),
        ({"topology": "triple"}, "topology: 'triple' is not allowed; use one of 'dual', 'shared'"),
        ({"grpo": {"beta": "high"}}, "grpo.beta: expected a number"),
        ({"grpo": {"num_generations": 1}}, "grpo.num_generations: 1 is too small"),
        ({"lora": {"alpah": 8}}, "lora.alpah: unknown key in 'lora'; did you mean 'alpha'?"),
        ({"lora": {"rank": 8}}, "lora.rank: unknown key in 'lora'; known: r, alpha"),
        ({"dry_run": "yes"}, "dry_run: expected true or false"),
        ({"rounds": 2.5}, "rounds: expected an integer"),
        ({"topology": "shared"}, "shared_model: required when topology is 'shared'"),
        ({"reasoning": {"stages": ["code", "informal"]}}, "reasoning.stages"),
        ({"grpo": {"num_generations": 4, "per_device_batch_size": 6}}, "multiple of"),
        ({"kubernetes": {"tolerations": [{"operator": "Maybe"}]}}, "kubernetes.tolerations[0]"),
        ({"data": {"pass_k": [5]}}, "data.pass_k: 5 needs"),
        ({"grpo": {"revisit_order": "lowest_reward"}}, "set grpo.skip_flat_problems: true"),
        ({"backend": "mlx", "tuning_mode": "full"}, "backend: 'mlx' supports tuning_mode 'lora'"),
        (
            {"backend": "mlx", "topology": "shared", "shared_model": "m"},
            "backend: 'mlx' supports topology 'dual' only",
        ),
        ({"backend": "mlx", "warm_start": {"steps": 8}}, "warm_start.steps: the warm start"),
        ({"data": {"families": {"families": ["nope"]}}}, "data.families.families: unknown family"),
        ({"data": {"families": {"levels": [4]}}}, "data.families.levels: 4; use levels among"),
        ({"data": {"families": {"levels": []}}}, "data.families.levels: name at least one"),
        (
            {"data": {"train": ["families"], "families": {"seed": 3, "heldout_seed": 3}}},
            "data.families.heldout_seed: equals data.families.seed",
        ),
        ({"rewards": {"answerer": "length"}}, "rewards.answerer: 'length' is not allowed"),
        (
            {"rewards": {"generator": "hardness"}},
            "rewards.generator: 'hardness' is not allowed; use one of 'adversarial', 'catch'",
        ),
        ({"coach": {"last_k": 0}}, "coach.last_k: 0 is too small; must be >= 1"),
        ({"coach": {"success_threshold": 1.5}}, "coach.success_threshold: 1.5 is too large"),
        ({"coach": {"failure_threshold": -0.1}}, "coach.failure_threshold: -0.1 is too small"),
        (
            {"coach": {"failure_threshold": 0.7, "success_threshold": 0.7}},
            "coach.failure_threshold: 0.7 must be below coach.success_threshold (0.7)",
        ),
        ({"coach": {"start_level": 4}}, "coach.start_level: 4 is too large; must be <= 3"),
        ({"coach": {"enable": True}}, "coach.enable: unknown key in 'coach'; did you mean"),
        (
            {"kubernetes": {"train_cpu": "8 cores"}},
            "kubernetes.train_cpu: '8 cores' is not a CPU quantity above 0",
        ),
        ({"kubernetes": {"train_cpu": "0"}}, "kubernetes.train_cpu: '0' is not a CPU quantity"),
        ({"kubernetes": {"cpu": "2x"}}, "kubernetes.cpu: '2x' is not a CPU quantity"),
        (
            {"kubernetes": {"train_memory": "32GB"}},
            "kubernetes.train_memory: '32GB' is not a memory quantity above 0; write e.g.",
        ),
        ({"kubernetes": {"memory": "0Gi"}}, "kubernetes.memory: '0Gi' is not a memory quantity"),
    ],
)
def test_invalid_values_name_the_field(data, fragment):
    with pytest.raises(ConfigError) as info:
        from_dict(data)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_resources_take_kubernetes_quantities():
    cfg = from_dict({"kubernetes": {"train_cpu": 12, "cpu": "500m", "train_memory": "64Gi"}})
    assert (cfg.kubernetes.train_cpu, cfg.kubernetes.cpu) == ("12", "500m")
    assert from_dict({"kubernetes": {"train_cpu": 0.5}}).kubernetes.train_cpu == "0.5"


def test_overrides_keep_yaml_types():
    cfg = load_config(ROOT / "configs/smoke.yaml", ["rounds=3", "grpo.beta=0.04", "dry_run=true"])
    assert (cfg.rounds, cfg.grpo.beta, cfg.dry_run) == (3, 0.04, True)
    cfg = load_config(None, ["lora.target_modules=[q_proj]"])
    assert cfg.lora.target_modules == ["q_proj"]


def test_override_of_unknown_field_is_refused():
    with pytest.raises(ConfigError, match=r"grpo\.betta: unknown key"):
        load_config(None, ["grpo.betta=1"])


def test_shared_topology_uses_the_shared_model_for_both_roles():
    cfg = from_dict({"topology": "shared", "shared_model": "smollm2-135m"})
    assert cfg.model_for("answerer").name == cfg.model_for("generator").name == "smollm2-135m"


def test_digest_is_stable_and_sensitive():
    a, b = from_dict({}), from_dict({"seed": 1})
    assert a.digest() == from_dict({}).digest()
    assert a.digest() != b.digest()


def test_reference_documents_every_leaf_field():
    rows = cfgmod.reference()
    keys = {r[0] for r in rows}
    assert {"rounds", "grpo.epsilon", "kubernetes.gpu.count", "lora.task_type"} <= keys
    assert all(r[3] for r in rows), "every field needs a doc string"


def _cli(*args, cwd=ROOT):
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli.main", *args], capture_output=True, text=True, cwd=cwd
    )


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("rounds: 0\n", "rounds: 0 is too small"),
        ("roundz: 1\n", "roundz: unknown key"),
        ("phase_schedule: random\n", "phase_schedule: 'random' is not allowed"),
        ("rounds: [1\nseed: 2\n", "YAML syntax error at line 2"),
        ("- a\n- b\n", "top level must be a mapping"),
    ],
)
def test_cli_validate_rejects_bad_files_in_one_line(tmp_path, text, fragment):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    result = _cli("config", "validate", "--config", str(path))
    assert result.returncode == 2
    assert fragment in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_cli_validate_missing_file():
    result = _cli("config", "validate", "--config", "no/such.yaml")
    assert result.returncode == 2
    assert result.stderr.strip() == "error: no/such.yaml: no such config file"


def test_cli_validate_and_show_a_good_file():
    result = _cli("config", "validate", "--config", "configs/smoke.yaml")
    assert result.returncode == 0, result.stderr
    shown = _cli("config", "show", "--config", "configs/smoke.yaml", "--set", "rounds=4")
    assert shown.returncode == 0
    assert "rounds: 4" in shown.stdout


def test_config_reference_doc_is_in_sync():
    doc = (ROOT / "docs" / "config-reference.md").read_text()
    assert doc == cfgmod.reference_markdown(), "run: sparring config reference --markdown"


def test_a_run_of_a_seed_per_run_config_trains_with_a_seed_of_its_own():
    """Config.for_run: the seed follows the run id, is the same for every task of one run, is
    never 0 (training by `seed` alone), and deriving twice changes nothing (a TrainJob gets the
    derived config and derives again)."""
    import doctest

    from sparring.config import schema

    assert doctest.testmod(schema).failed == 0
    cfg = load_config(str(ROOT / "configs" / "smoke.yaml"), ["seed_per_run=true"])
    seeds = {cfg.for_run(f"run-{i}").training_seed for i in range(50)}
    assert len(seeds) == 50 and 0 not in seeds
    once = cfg.for_run("run-7")
    assert once.seed_per_run is False and once.for_run("run-8") == once
    assert cfg.for_run("") == cfg  # no run (the plain runner): the config as written
    off = load_config(str(ROOT / "configs" / "smoke.yaml"))
    assert off.for_run("run-7") == off


def test_every_component_of_a_run_derives_its_config_for_that_run():
    """A component that forgot the run id would train with another seed than its siblings.
    Components run their row's task (sparring.phases.table): each task of a component that
    takes the run id derives its config through it (`TaskArgs.config`, which passes
    parent_run_id, or materialize's `for_parent_run`)."""
    import ast
    import inspect

    from sparring.phases import kfp_io, table

    assert 'config_from_yaml(self["config_yaml"], self.args.get("parent_run_id"' in (
        inspect.getsource(kfp_io.TaskArgs.config)
    )
    for path in sorted((ROOT / "components").glob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, ast.FunctionDef):
                continue
            if "parent_run_id" not in {a.arg for a in fn.args.args}:
                continue
            row = table.PHASES[fn.name.replace("_", "-")]
            source = inspect.getsource(row.task)
            assert "t.config()" in source or "for_parent_run(cfg, run_id, run)" in source, (
                f"{path.name}: {fn.name}'s task {row.task.__name__} does not derive its config "
                "for its run"
            )
