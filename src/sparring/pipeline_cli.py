"""`sparring compile | run | submit | schedule | runs list`: the pipeline from the command line.

Covers: compiling a config to KFP IR YAML (byte-stable), running the same DAG locally through
kfp.local (SubprocessRunner, use_venv=False) with `--resume` via kfp.local's file cache, and
talking to a Kubeflow Pipelines server (submit a run, schedule a recurring run, list runs).

Local runs: the CLI creates the MLflow parent run before the DAG starts and passes its id and a
local run id as pipeline parameters (kfp.local has no server-side run id worth tagging, and a
fresh id per attempt would defeat caching). State lives in `<pipeline_root>/.sparring/<name>/`:
`state.json` (parent run id, local run id, config digest) and `cache/` (kfp.local's cache).
`--resume` reuses both, so finished tasks are cache hits and are not repeated (kfp.local keys
the cache on component, image, command and arguments, and treats an entry as a miss when an
artifact it points to was deleted); without `--resume` the cache is cleared first.

Cluster runs: `materialize` creates the parent run, tagged with `dsl.PIPELINE_JOB_ID_PLACEHOLDER`.
Host: `--host`, KF_PIPELINES_ENDPOINT or KFP_HOST. Token: `--token`, KFP_TOKEN, or the file at
KF_PIPELINES_SA_TOKEN_PATH. Tests replace `_client_factory` with a fake.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path

from sparring.cli_common import add_config_args, config_from_args
from sparring.commands import add_group
from sparring.errors import SparringError

ROOT = Path(__file__).resolve().parents[2]


def _client_factory(host: str | None, token: str | None, namespace: str | None):
    """A kfp.Client (replaced by a fake in tests)."""
    import kfp

    return kfp.Client(host=host, existing_token=token, namespace=namespace or "kubeflow")


def pipelines_module():
    """`pipelines.selfplay`; the repo root holds `components/` and `pipelines/`."""
    try:
        from pipelines import selfplay
    except ModuleNotFoundError as exc:
        if exc.name not in ("pipelines", "components"):
            raise
        sys.path.insert(0, str(ROOT))
        from pipelines import selfplay
    return selfplay


# --------------------------------------------------------------------------- parser


def add_commands(sub) -> None:
    p = sub.add_parser("compile", help="compile a config's pipeline to KFP IR YAML")
    add_config_args(p, required=True)
    p.add_argument("--output", "-o", required=True, metavar="FILE", help="IR YAML to write")
    p.set_defaults(func=_compile)

    p = sub.add_parser("run", help="run the pipeline locally (kfp.local, subprocesses)")
    add_config_args(p, required=True)
    p.add_argument("--resume", action="store_true", help="reuse finished tasks of the last run")
    p.add_argument("--pipeline-root", metavar="DIR", help="local outputs (default: config's)")
    p.set_defaults(func=_run)

    p = sub.add_parser("submit", help="submit one run to a Kubeflow Pipelines server")
    add_config_args(p, required=True)
    _add_server_args(p)
    p.add_argument("--experiment", help="KFP experiment (default: tracking.experiment)")
    p.add_argument("--run-name", help="run name (default: <name>-<UTC time>)")
    p.set_defaults(func=_submit)

    p = sub.add_parser("schedule", help="create a recurring run on a Kubeflow Pipelines server")
    add_config_args(p, required=True)
    _add_server_args(p)
    when = p.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", help="six-field cron, seconds first: '0 0 3 * * *' = 03:00 daily")
    when.add_argument("--interval", type=int, metavar="SECONDS", help="period in seconds")
    p.add_argument("--name", help="recurring run name (default: <name>-recurring)")
    p.add_argument("--experiment", help="KFP experiment (default: tracking.experiment)")
    p.set_defaults(func=_schedule)

    runs = add_group(sub, "runs", "list pipeline runs on a Kubeflow Pipelines server")
    p = runs.add_parser("list", help="recent runs, newest first")
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


def _compiled(cfg, tmp: str) -> str:
    path = Path(tmp) / f"{cfg.name}.yaml"
    pipelines_module().compile_pipeline(cfg, path)
    return str(path)


def _experiment(args, cfg) -> str:
    return args.experiment or cfg.tracking.experiment


# --------------------------------------------------------------------------- commands


def _compile(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
    t0 = time.perf_counter()
    out = pipelines_module().compile_pipeline(cfg, args.output)
    print(f"compiled {cfg.name} ({cfg.rounds} rounds) -> {out} in {time.perf_counter() - t0:.1f}s")
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


def _schedule(args: argparse.Namespace) -> int:
    cfg = config_from_args(args)
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


def _state_dir(root: Path, cfg) -> Path:
    return root / ".sparring" / cfg.name


def _local_root(args, cfg) -> Path:
    root = args.pipeline_root or cfg.storage.pipeline_root
    if root.startswith(("s3://", "gs://", "minio://")):
        # kfp.local cannot write to object storage: it would make a local folder named "s3:".
        raise SparringError(
            f"storage.pipeline_root {root!r}: local runs need a local folder; "
            "pass --pipeline-root DIR"
        )
    return Path(root).resolve()


def prepare_local_run(cfg, root: Path, resume: bool) -> dict:
    """Parent run and local run id for a local run; reused from state.json with --resume."""
    from sparring import tracking

    state_dir = _state_dir(root, cfg)
    state_file = state_dir / "state.json"
    cache_dir = state_dir / "cache"
    if resume and state_file.is_file():
        state = json.loads(state_file.read_text())
        if state.get("digest") == cfg.digest():
            state["resumed"] = True
            return state
        print("config changed since the last run: starting a new run", file=sys.stderr)
    elif resume:
        print("nothing to resume: starting a new run", file=sys.stderr)
    shutil.rmtree(cache_dir, ignore_errors=True)
    kfp_run_id = f"local-{cfg.name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    state = {
        "kfp_run_id": kfp_run_id,
        "parent_run_id": tracking.start_parent_run(cfg, kfp_run_id),
        "digest": cfg.digest(),
        "resumed": False,
    }
    state_dir.mkdir(parents=True, exist_ok=True)
    state_file.write_text(json.dumps(state, indent=1))
    return state


@contextlib.contextmanager
def _quiet_console(log_path: Path):
    """kfp.local prints each task's executor input (the whole config) and logs; send all of
    it to `log_path` and let only Sparring's progress lines through (SPARRING_VERBOSE=1: all)."""
    from sparring.progress import ConsoleFilter

    if os.environ.get("SPARRING_VERBOSE"):
        yield
        return
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a") as log, warnings.catch_warnings():
        # kfp.local warns on every task that our base image is not a python image: it is.
        warnings.filterwarnings("ignore", message=".*non-Python base image.*")
        # ...and that resource limits mean nothing locally, once per task: we know.
        warnings.filterwarnings("ignore", message=".*have no effect in the current local runner.*")
        real = sys.stdout
        sys.stdout = ConsoleFilter(real, log)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stdout = real


def _pipeline_failure(exc: Exception, log_path: Path) -> SparringError:
    """One error naming the failed task and its error. A Sparring error inside a task is a
    message for the user; anything else is a bug, so its traceback is printed too."""
    from sparring.progress import failure_excerpt

    text = log_path.read_text(errors="replace") if log_path.exists() else ""
    task, error, trace = failure_excerpt(text)
    if not task:
        return SparringError(f"the pipeline failed ({exc}); its whole output: {log_path}")
    if trace and not error.startswith("sparring."):
        print("\n".join([f"--- task {task}, from {log_path}", *trace, "---"]), file=sys.stderr)
    message = error.split(": ", 1)[1] if error.startswith("sparring.") else error
    where = f"--resume continues after fixing it; the whole output: {log_path}"
    return SparringError(f"task {task} failed: {message or 'see its log'}; {where}")


def run_local(cfg, root: Path, resume: bool = False) -> dict:
    """Run the pipeline of a config through kfp.local; returns the state and a summary."""
    from kfp import local

    from sparring import storage, tracking

    storage.configure(cfg)
    # Tasks are subprocesses: they inherit the (absolute) tracking URI and the S3 endpoint.
    os.environ["MLFLOW_TRACKING_URI"] = tracking.tracking_uri(cfg)
    if cfg.storage.s3_endpoint:
        os.environ.setdefault("AWS_ENDPOINT_URL", cfg.storage.s3_endpoint)
    state = prepare_local_run(cfg, root, resume)
    local.init(
        runner=local.SubprocessRunner(use_venv=False),
        pipeline_root=str(root),
        enable_caching=True,
        cache_root=str(_state_dir(root, cfg) / "cache"),
    )
    pipeline = pipelines_module().build_pipeline(cfg, local=True)
    log_path = root / f"run-{state['kfp_run_id']}.log"
    print(f"Running {cfg.name} through kfp.local; every task's full output: {log_path}")
    t0 = time.perf_counter()
    try:
        with _quiet_console(log_path):
            pipeline(parent_run_id=state["parent_run_id"], kfp_run_id=state["kfp_run_id"])
    except Exception as exc:
        tracking.finish_parent_run(cfg, state["parent_run_id"], status="FAILED")
        raise _pipeline_failure(exc, log_path) from None
    state["seconds"] = time.perf_counter() - t0
    state["children"] = child_summary(cfg, state["parent_run_id"])
    return state


def child_summary(cfg, parent_run_id: str) -> list[dict]:
    """One entry per MLflow child run of the parent: name, status, seconds, metric count."""
    import mlflow

    from sparring import tracking

    mlflow.set_tracking_uri(tracking.tracking_uri(cfg))
    parent = mlflow.get_run(parent_run_id)
    runs = mlflow.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'",
        order_by=["attributes.start_time ASC"],
        output_format="list",
    )
    out: dict[str, dict] = {}  # the last attempt per task; retries and resumes are counted
    for r in runs:
        end = r.info.end_time or r.info.start_time
        attempts = out.get(r.info.run_name, {}).get("attempts", 0) + 1
        out.pop(r.info.run_name, None)
        out[r.info.run_name] = {
            "name": r.info.run_name,
            "status": r.info.status,
            "seconds": (end - r.info.start_time) / 1000.0,
            "metrics": len(r.data.metrics),
            "attempts": attempts,
        }
    return list(out.values())


def learn_lines(cfg, parent_run_id: str) -> list[str]:
    """The LEARN lines of a finished run, from its phases' MLflow runs; also logged to the
    parent run as learn.txt."""
    import mlflow

    from sparring import tracking
    from sparring.evaluation import learning

    mlflow.set_tracking_uri(tracking.tracking_uri(cfg))
    parent = mlflow.get_run(parent_run_id)
    runs = mlflow.search_runs(
        [parent.info.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{parent_run_id}'",
        order_by=["attributes.start_time ASC"],
        output_format="list",
    )
    summary, breaks, useful = learning.from_phase_runs(
        [(r.info.run_name, r.data.metrics) for r in runs]
    )
    lines = learning.learn_lines(summary, breaks, useful)
    mlflow.MlflowClient().log_text(parent_run_id, "\n".join(lines) + "\n", "learn.txt")
    return lines


def _run(args: argparse.Namespace) -> int:
    from sparring import tracking

    cfg = config_from_args(args)
    root = _local_root(args, cfg)
    state = run_local(cfg, root, resume=args.resume)
    print(f"\n== {cfg.name}: done in {state['seconds']:.0f}s (outputs under {root})")
    for c in state["children"]:
        tries = f"  ({c['attempts']} attempts)" if c["attempts"] > 1 else ""
        line = f"  {c['name']:28s} {c['status']:9s} {c['seconds']:7.1f}s  {c['metrics']} metrics"
        print(line + tries)
    print(f"MLflow parent run {state['parent_run_id']}: {tracking.ui_hint(cfg)}")
    if cfg.data.val_samples:
        print("\n".join(learn_lines(cfg, state["parent_run_id"])))
    return 0
