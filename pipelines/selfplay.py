"""The self-play DAG: materialize -> init_models -> [warm start] -> rounds (unrolled) -> evaluate
-> select.

`build_pipeline(cfg)` returns the @dsl.pipeline function for one config; `compile_pipeline(cfg,
path)` writes deterministic KFP IR YAML (same config -> same bytes).

The DAG is unrolled from `sparring.phases.schedule.plan_phases(cfg)`, the one order of phases
that the plain runner walks too: one task per planned phase, in the plan's order, each training
task given its phase's name (`phase`), which fixes its step count and seeds its draws the same way
in both runners. Within a round (`phase_schedule`):
- generator_answerer: train generator against the frozen answerer of the previous round (round 1:
  the initial answerer) -> validate tests (sandbox image) -> train answerer on the updated bank;
- answerer_generator_answerer: train answerer -> train generator against that frozen answerer ->
  validate -> train answerer again;
then `steps.alternating` pairs (train answerer 1 step -> train generator 1 step against it ->
validate), named `round R · alt K · ...`.
With `warm_start.steps > 0`, a warm_start task (SFT of the answerer on the training split's
reference solutions; a training task like the GRPO phases) sits between init_models and round 1:
round 1 starts from (and its generator attacks) the warm-started answerer. It also starts the
snapshot manifest with that model (round 0, label "warm-start"); the baseline of evaluation stays
the untrained base model, so the report reads base -> warm start -> rounds.
After each round's last phase a tiny `snapshot` task appends the round's latest answerer, tests
and generator (artifact URIs) to a manifest; evaluate reads all snapshots from it (a
compile-time list of artifacts cannot be passed to one task in KFP v2; dsl.Collected only
gathers ParallelFor outputs).

Cluster settings (resources, Secrets, placement, timeouts, the sandbox pod's label and
annotation; ignored silently by kfp.local) are applied per kind of task by
`pipelines.common.Tasks`, which the game DAG (pipelines.game) uses too.

Multi-node (`kubernetes.trainer.nodes > 1`, cluster build only): the GRPO phases' tasks get
`launcher="trainjob"` and a light task's resources; each creates a Kubeflow Trainer TrainJob
(sparring.cluster.launch), waits for it and fetches its outputs. The warm start stays in-task.

With `generator_mode: fuzz` (the generator that does not learn, sparring.phases.fuzz) the
generator's task draws tests and trains nothing: a light task, in its own pod, never a TrainJob.

Caching: the seed and every other knob reach each task through the config YAML parameter, so a
training task's inputs fix its sampling and KFP caching stays on (that is what `sparring run
--resume` relies on). In the cluster build, materialize and init_models read mutable state (the
persisted bank, the registered champion, a fresh KFP run id), so their caching is off and every
run recomputes downstream. The local build (`local=True`) takes the run id as a parameter instead
of `dsl.PIPELINE_JOB_ID_PLACEHOLDER`, so a resumed local run reproduces the same cache keys.
"""

# No `from __future__ import annotations`: KFP reads the pipeline signature's real types.
from pathlib import Path

from kfp import compiler, dsl

from components import make_components
from pipelines.common import Tasks, config_line, fast_setters, pipeline_name
from pipelines.game import build_game_pipeline
from sparring.config import Config
from sparring.phases.schedule import Phase, phase_label, plan_phases


def _task_name(cfg: Config, plan: list[Phase], phase: Phase, what: str) -> str:
    """A phase task's display name: `round 2 · train answerer`, with ` (final)` for the second
    answerer of an answerer_generator_answerer round, `alt 3 · ` in the third alternating pair."""
    if phase.alternating:
        pair = sum(
            1
            for p in plan
            if p.round == phase.round and p.alternating and p.kind == "answerer"
            and p.index <= phase.index
        )  # fmt: skip
        return f"round {phase.round} · alt {pair} · {what}"
    final = " (final)" if phase_label(cfg, phase) == "answerer_final" else ""
    return f"round {phase.round} · {what}{final}"


def build_pipeline(cfg: Config, local: bool = False):
    """The @dsl.pipeline function of a config (rounds and phase order fixed at compile time).

    local=True: the KFP run id is the `kfp_run_id` parameter (kfp.local, stable across
    `--resume`); otherwise materialize receives dsl.PIPELINE_JOB_ID_PLACEHOLDER. A config that
    names a game (`game.name`) gets that game's pipeline (pipelines.game)."""
    with fast_setters():
        return _build_pipeline(cfg, local)


def _build_pipeline(cfg: Config, local: bool):
    if cfg.game.name:
        return build_game_pipeline(cfg, local)
    if cfg.backend == "mlx" and cfg.warm_start.steps > 0:
        from sparring.errors import SparringError

        raise SparringError(
            "backend: the warm start (warm_start.steps > 0) runs on torch only; "
            "set warm_start.steps: 0 with backend: mlx"
        )
    c = make_components(cfg)
    t = Tasks(cfg)
    # kubernetes.trainer.nodes > 1: the GRPO phases become TrainJobs (kfp.local trains in-task,
    # as it ignores every other cluster setting)
    launcher = "trainjob" if not local and cfg.kubernetes.trainer.nodes > 1 else "task"
    place = t.trainjob if launcher == "trainjob" else t.training
    config_text = config_line(cfg)
    use_champion_default = not cfg.storage.start_fresh

    plan = plan_phases(cfg)
    round_end = {p.round: p.index for p in plan}  # a snapshot follows each round's last phase

    def _body(config_yaml, parent_run_id, run_key, use_champion):
        """Every task but the exit task: one per phase of `plan`, in its order (init_models
        right after materialize, a snapshot after each round's last phase), then evaluate and
        select. `s` holds what the next task reads: the latest model of each role, the bank,
        the latest generator's outputs and the snapshot manifest."""
        s: dict = {"manifest": None}

        def materialize(p):
            mat = c.materialize(
                config_yaml=config_yaml,
                parent_run_id=parent_run_id,
                kfp_run_id=run_key,
            )
            t.light(mat, "materialize", retry=True, cache=local)
            s["run_id"] = mat.outputs["Output"]
            s["data"] = mat.outputs["data"]
            init = c.init_models(
                config_yaml=config_yaml, parent_run_id=s["run_id"], use_champion=use_champion
            )
            t.light(init, "init models", cache=local)
            s["answerer"] = init.outputs["answerer"]
            s["generator"] = init.outputs["generator"]
            s["bank"] = s["data"]  # the materialized folder holds bank.jsonl

        def warm_start(p):
            warm = c.warm_start(
                config_yaml=config_yaml,
                parent_run_id=s["run_id"],
                data=s["data"],
                init_model=s["answerer"],
            )
            t.training(warm, "warm start (SFT answerer)")
            s["answerer"] = warm.outputs["model"]
            s["manifest"] = warm.outputs["snapshots"]  # starts with the warm-started answerer

        def train(p, component, what: str, trains: bool = True, **models):
            """A GRPO phase's task: the inputs every training phase takes, plus `models`;
            `trains=False`: a phase in a training phase's place that trains nothing (the
            generator that does not learn), a light task in its own pod."""
            task = component(
                config_yaml=config_yaml,
                parent_run_id=s["run_id"],
                round_index=p.round,
                phase=p.name,
                data=s["data"],
                **models,
                launcher=launcher if trains else "task",
            )
            (place if trains else t.light)(task, _task_name(cfg, plan, p, what))
            return task.outputs

        def answerer(p):
            out = train(p, c.train_answerer, "train answerer",
                        bank=s["bank"], init_model=s["answerer"])  # fmt: skip
            s["answerer"] = out["model"]

        def generator(p):
            fuzz = cfg.generator_mode == "fuzz"  # hypothesis draws the tests: no model, no GRPO
            out = train(p, c.train_generator, "draw tests (fuzz)" if fuzz else "train generator",
                        trains=not fuzz, frozen_answerer=s["answerer"],
                        init_model=s["generator"])  # fmt: skip
            s["generator"] = out["model"]
            s["tests"] = out["tests"]
            s["frozen_solutions"] = out["frozen_solutions"]

        def validate(p):
            val = c.validate_tests(
                config_yaml=config_yaml,
                round_index=p.round,
                data=s["data"],
                tests=s["tests"],
                frozen_solutions=s["frozen_solutions"],
                bank_in=s["bank"],
            )
            t.sandbox(val, _task_name(cfg, plan, p, "validate tests"))
            s["bank"] = val.outputs["bank"]

        def snapshot(r: int):
            # a round with no generator phase (phase_schedule answerer) has no tests of its own:
            # the materialized folder stands in (no tests file in it: an empty round); its
            # generator stays the init model's (evaluation measures the final generator held
            # out only when a generator phase ran)
            tests = s.get("tests", s["data"])
            inputs = {"answerer": s["answerer"], "tests": tests, "generator": s["generator"]}
            if s["manifest"] is None:
                snap = c.snapshot_first(round_index=r, **inputs)
            else:
                snap = c.snapshot_next(round_index=r, previous=s["manifest"], **inputs)
            t.light(snap, f"round {r} · snapshot", retry=True)
            s["manifest"] = snap.outputs["snapshots"]

        tasks = {"materialize": materialize, "warm_start": warm_start, "answerer": answerer,
                 "generator": generator, "validate": validate}  # fmt: skip
        for p in plan:
            tasks[p.kind](p)
            if p.round and round_end[p.round] == p.index:
                snapshot(p.round)

        ev = c.evaluate(
            config_yaml=config_yaml,
            parent_run_id=s["run_id"],
            data=s["data"],
            snapshots=s["manifest"],
            bank=s["bank"],
        )
        t.light(ev, "evaluate", retry=True)

        sel = c.select(
            config_yaml=config_yaml,
            parent_run_id=s["run_id"],
            report=ev.outputs["report"],
            snapshots=s["manifest"],
            bank=s["bank"],
        )
        t.light(sel, "select & register")

    @dsl.pipeline(
        name=pipeline_name(cfg),
        description=(
            f"Sparring self-play: {cfg.rounds} rounds ({cfg.phase_schedule}), "
            f"{cfg.tuning_mode} tuning, config digest {cfg.digest()}"
        ),
    )
    def selfplay(
        config_yaml: str = config_text,
        parent_run_id: str = "",
        kfp_run_id: str = "",
        use_champion: bool = use_champion_default,
    ):
        run_key = kfp_run_id if local else dsl.PIPELINE_JOB_ID_PLACEHOLDER
        # The exit task runs however the rest ends; it may take only pipeline inputs, so it
        # finds the parent run by the KFP run id tag rather than by materialize's output.
        fin = c.finalize(config_yaml=config_yaml, parent_run_id=parent_run_id, kfp_run_id=run_key)
        t.light(fin, "close the MLflow run", cache=False)
        with dsl.ExitHandler(fin, name="self-play"):
            _body(config_yaml, parent_run_id, run_key, use_champion)

    return selfplay


def compile_pipeline(cfg: Config, path: str | Path) -> Path:
    """Compile the cluster pipeline of a config to IR YAML; the output is byte-stable."""
    path = Path(path)
    if path.suffix != ".yaml":
        from sparring.errors import SparringError

        raise SparringError(f"{path}: the KFP compiler writes IR only to a .yaml file")
    path.parent.mkdir(parents=True, exist_ok=True)
    compiler.Compiler().compile(build_pipeline(cfg), package_path=str(path))
    return path
