"""`sparring compile | run | submit | schedule | recur | runs list`: the pipeline from the command
line.

Covers: arguments and thin handlers for compiling a config to KFP IR YAML (byte-stable), running
the same DAG locally (`run`, `--resume`), and talking to a Kubeflow Pipelines server (submit a
run, schedule a recurring run, list runs) and playing a schedule here (`recur`:
sparring.recurring). Does not cover: the local runner itself (kfp.local,
its state file, resume, log capture and run summaries), which is `sparring.local_run`.

Cluster runs: `materialize` creates the parent run, tagged with `dsl.PIPELINE_JOB_ID_PLACEHOLDER`.
Host: `--host`, KF_PIPELINES_ENDPOINT or KFP_HOST. Token: `--token`, KFP_TOKEN, or the file at
KF_PIPELINES_SA_TOKEN_PATH. Tests replace `_client_factory` with a fake.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from pathlib import Path

from sparring import local_run
from sparring.cli.common import (
    add_config_args,
    add_group,
    config_from_args,
    output_dir,
    output_error,
    output_file,
)
from sparring.errors import SparringError

RECUR_CONFIG = "configs/recur.yaml"  # what `schedule` and `recur` run without --config


def _client_factory(host: str | None, token: str | None, namespace: str | None):
    """A kfp.Client (replaced by a fake in tests)."""
    import kfp

    return kfp.Client(host=host, existing_token=token, namespace=namespace or "kubeflow")


# --------------------------------------------------------------------------- parser


def add_commands(sub) -> None:
    p = sub.add_parser(
        "compile",
        help="compile a config's pipeline to KFP IR YAML",
        description="Compile the config's pipeline (the self-play DAG, or the game DAG when "
        "game.name is set) to a KFP IR YAML file to upload to Kubeflow Pipelines; the same "
        "config compiles to the same bytes. The config travels inside it: every task reads it.",
    )
    add_config_args(p, required=True)
    p.add_argument("--output", "-o", required=True, metavar="FILE", help="IR YAML to write")
    p.set_defaults(func=_compile)

    p = sub.add_parser(
        "run",
        help="run the pipeline locally (kfp.local, subprocesses)",
        description="Run the config's pipeline on this machine, the same DAG as on a cluster, "
        "each task a subprocess (kfp.local), logging to MLflow (tracking.mlflow_uri). Prints "
        "the START line, each task's status and time, and with data.val_samples the LEARN "
        "lines. A killed run goes on with --resume: finished tasks are reused.",
    )
    add_config_args(p, required=True)
    p.add_argument(
        "--resume",
        action="store_true",
        help="reuse finished tasks of the last run (same config and code; else a new run)",
    )
    p.add_argument("--pipeline-root", metavar="DIR", help="local outputs (default: config's)")
    p.set_defaults(func=_run)

    p = sub.add_parser(
        "submit",
        help="submit one run to a Kubeflow Pipelines server",
        description="Compile the config's pipeline and start one run of it on a Kubeflow "
        "Pipelines server (--host), in --experiment, under the config's Kubernetes service "
        "account; prints the run id.",
    )
    add_config_args(p, required=True)
    _add_server_args(p)
    p.add_argument("--experiment", help="KFP experiment (default: tracking.experiment)")
    p.add_argument("--run-name", help="run name (default: <name>-<UTC time>)")
    p.set_defaults(func=_submit)

    p = sub.add_parser(
        "schedule",
        help="create a recurring run on a Kubeflow Pipelines server",
        description="Each scheduled run starts from the champion the run before registered and "
        "inherits its bank (storage.start_fresh: false). Without --config: "
        f"{RECUR_CONFIG} (the recurring config; `sparring recur` plays it on this machine).",
    )
    add_config_args(p, without=f"{RECUR_CONFIG} (from a checkout's root)")
    _add_server_args(p)
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", help="six-field cron, seconds first: '0 0 3 * * *' = 03:00 daily")
    when.add_argument("--interval", type=int, metavar="SECONDS", help="period in seconds")
    p.add_argument("--name", help="recurring run name (default: <name>-recurring)")
    p.add_argument("--experiment", help="KFP experiment (default: tracking.experiment)")
    p.add_argument(
        "--same-seed",
        action="store_true",
        help="train every run with the config's training_seed; by default each run draws its "
        "own from its run id (seed_per_run), so a run after one that was not promoted does not "
        "replay it",
    )
    p.set_defaults(func=_schedule)

    p = sub.add_parser(
        "recur",
        help="play a schedule locally: N runs, each from the last one's champion and bank",
        description="Runs the recurring config N times through `sparring run`, in one MLflow "
        "store and one bank folder (local_outputs/recur/<UTC time>/, or --chain DIR to go on "
        "with one), the way `sparring schedule` runs it on a cluster. Each run prints its "
        "START line and its LEARN lines against the base model and against its own start; "
        "the chain's table ends the output and is written to chain.md there.",
    )
    add_config_args(p, without=f"{RECUR_CONFIG} (from a checkout's root)")
    p.add_argument("--runs", type=int, default=3, help="how many runs (default 3)")
    p.add_argument("--chain", metavar="DIR", help="a chain folder to continue (default: new)")
    p.set_defaults(func=_recur)

    runs = add_group(sub, "runs", "list pipeline runs on a Kubeflow Pipelines server")
    p = runs.add_parser(
        "list",
        help="recent runs, newest first",
        description="List the newest runs on a Kubeflow Pipelines server (all, or one "
        "--experiment's): run id, state, creation time and name.",
    )
    _add_server_args(p)
    p.add_argument("--experiment", help="only runs of this experiment")
    p.add_argument("--limit", type=int, default=20, help="how many runs")
    p.set_defaults(func=_runs_list)


def _add_server_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--host", help="KFP API URL (default: KF_PIPELINES_ENDPOINT or KFP_HOST)")
    p.add_argument("--namespace", help="Kubeflow namespace (multi-user installs)")
    p.add_argument("--token", help="bearer token (default: KFP_TOKEN or the SA token file)")


# --------------------------------------------------------------------------- server helpers


def _host(args) -> str:
    host = args.host or os.environ.get("KF_PIPELINES_ENDPOINT") or os.environ.get("KFP_HOST")
    if not host:
        raise SparringError(
            "no KFP host: pass --host URL or set KF_PIPELINES_ENDPOINT (e.g. "
            "http://localhost:8080 after kubectl port-forward svc/ml-pipeline-ui)"
        )
    return host


def _token(args) -> str | None:
    if getattr(args, "token", None):
        return args.token
    if os.environ.get("KFP_TOKEN"):
        return os.environ["KFP_TOKEN"]
    path = os.environ.get("KF_PIPELINES_SA_TOKEN_PATH")
    if path and Path(path).is_file():
        return Path(path).read_text().strip()
    return None


def _client(args):
    return _client_factory(_host(args), _token(args), getattr(args, "namespace", None))


def validate_cron(expr: str) -> str:
    """KFP cron has six fields, seconds first; reject anything else with a one-line hint."""
    fields = expr.split()
    if len(fields) != 6:
        raise SparringError(
            f"--cron {expr!r}: KFP needs six fields (seconds minutes hours day-of-month month "
            f"day-of-week), got {len(fields)}; e.g. '0 0 3 * * *' for 03:00 every day"
        )
    return " ".join(fields)


def pipelines_module():
    """The repository's `pipelines.selfplay` (the DAG), which the CLI hands to the local runner
    and the compiler; the checkout's root holds `components/` and `pipelines/`."""
    try:
        from pipelines import selfplay
    except ModuleNotFoundError as exc:
        if exc.name not in ("pipelines", "components"):
            raise
        sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
        from pipelines import selfplay
    return selfplay


def _compiled(cfg, tmp: str) -> str:
    path = Path(tmp) / f"{cfg.name}.yaml"
    pipelines_module().compile_pipeline(cfg, path)
    return str(path)


def _experiment(args, cfg) -> str:
    return args.experiment or cfg.tracking.experiment


# --------------------------------------------------------------------------- commands


def _compile(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    target = output_file(args.output, "--output")
    t0 = time.perf_counter()
    try:
        out = pipelines_module().compile_pipeline(cfg, target)
    except OSError as exc:
        error = output_error(exc, target, "--output")
        if error is None:
            raise
        raise error from None
    what = f"game {cfg.game.name}" if cfg.game.name else f"{cfg.rounds} rounds"
    print(f"compiled {cfg.name} ({what}) -> {out} in {time.perf_counter() - t0:.1f}s")
    return 0


def _submit(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    client = _client(args)
    run_name = args.run_name or f"{cfg.name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    with tempfile.TemporaryDirectory() as tmp:
        result = client.create_run_from_pipeline_package(
            _compiled(cfg, tmp),
            arguments={},
            run_name=run_name,
            experiment_name=_experiment(args, cfg),
            namespace=args.namespace,
            service_account=cfg.kubernetes.service_account,
        )
    print(f"submitted run {run_name}: id {getattr(result, 'run_id', result)}")
    return 0


def _recurring_config(args: argparse.Namespace) -> None:
    """`--config` defaults to the recurring config (found from a checkout's root)."""
    if not args.config:
        if not Path(RECUR_CONFIG).is_file():
            raise SparringError(
                f"no --config and no {RECUR_CONFIG} here: pass --config FILE (a config with "
                "storage.start_fresh: false)"
            )
        args.config = RECUR_CONFIG


def _recur(args: argparse.Namespace) -> int:
    from sparring import recurring

    _recurring_config(args)
    if args.runs < 1:
        raise SparringError(f"--runs {args.runs}: at least 1")
    recurring.play(args.config, args.runs, args.chain, args.overrides)
    return 0


def _schedule(args: argparse.Namespace) -> int:
    _recurring_config(args)
    cfg = config_from_args(args)
    cfg = dataclasses.replace(cfg, seed_per_run=not args.same_seed)
    cron = validate_cron(args.cron) if args.cron else None
    if args.interval is not None and args.interval < 60:
        raise SparringError(f"--interval {args.interval}: use at least 60 seconds")
    client = _client(args)
    experiment = client.create_experiment(_experiment(args, cfg), namespace=args.namespace)
    name = args.name or f"{cfg.name}-recurring"
    with tempfile.TemporaryDirectory() as tmp:
        job = client.create_recurring_run(
            experiment_id=experiment.experiment_id,
            job_name=name,
            description=f"Sparring {cfg.name}: recurring self-play (config {cfg.digest()})",
            cron_expression=cron,
            interval_second=args.interval,
            max_concurrency=1,
            no_catchup=True,
            pipeline_package_path=_compiled(cfg, tmp),
            service_account=cfg.kubernetes.service_account,
        )
    when = f"cron '{cron}'" if cron else f"every {args.interval}s"
    print(f"scheduled {name} ({when}): id {getattr(job, 'recurring_run_id', job)}")
    seeds = (
        "each run draws its training seed from its run id (seed_per_run; --same-seed keeps "
        f"training_seed {cfg.training_seed})" if cfg.seed_per_run
        else f"every run trains with training_seed {cfg.training_seed} (--same-seed)"
    )  # fmt: skip
    print(f"  {seeds}")
    from sparring import recurring

    print(f"  {recurring.gate_line(cfg)}")
    return 0


def _runs_list(args: argparse.Namespace) -> int:
    client = _client(args)
    experiment_id = None
    if args.experiment:
        exp = client.get_experiment(experiment_name=args.experiment, namespace=args.namespace)
        experiment_id = exp.experiment_id
    resp = client.list_runs(
        page_size=args.limit,
        sort_by="created_at desc",
        experiment_id=experiment_id,
        namespace=args.namespace,
    )
    runs = getattr(resp, "runs", None) or []
    for run in runs:
        print(f"{run.run_id}  {run.state!s:10s}  {run.created_at}  {run.display_name}")
    print(f"{len(runs)} runs")
    return 0


# --------------------------------------------------------------------------- local runs


def _local_root(args, cfg) -> Path:
    root = args.pipeline_root or cfg.storage.pipeline_root
    if root.startswith(("s3://", "gs://", "minio://")):
        # kfp.local cannot write to object storage: it would make a local folder named "s3:".
        raise SparringError(
            f"storage.pipeline_root {root!r}: local runs need a local folder; "
            "pass --pipeline-root DIR"
        )
    flag = "--pipeline-root" if args.pipeline_root else "storage.pipeline_root"
    return output_dir(root, flag).resolve()


def _run(args: argparse.Namespace) -> int:
    from sparring import tracking
    from sparring.sandbox.gate import require_isolation

    cfg = config_from_args(args)
    root = _local_root(args, cfg)
    require_isolation(cfg)  # fail closed in one line before the run starts; else say which bwrap
    from sparring import recurring

    print(recurring.start_line(cfg), flush=True)
    state = local_run.run_local(cfg, root, pipelines_module().build_pipeline, resume=args.resume)
    print(f"\n== {cfg.name}: done in {state['seconds']:.0f}s (outputs under {root})")
    for c in state["children"]:
        tries = f"  ({c['attempts']} attempts)" if c["attempts"] > 1 else ""
        line = f"  {c['name']:28s} {c['status']:9s} {c['seconds']:7.1f}s  {c['metrics']} metrics"
        print(line + tries)
    print(f"MLflow parent run {state['parent_run_id']}: {tracking.ui_hint(cfg)}")
    if cfg.data.val_samples:
        print("\n".join(local_run.learn_lines(cfg, state["parent_run_id"])))
    return 0
