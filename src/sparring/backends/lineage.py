"""Where a run's answerer started, and which code ran it: the start record.

Every comparison Sparring makes (a treatment against its control, seeds pooled, the study's
arms) assumes each run started from the model its config names. Until 2026-11-30 runs in one
checkout silently trained on from the champion the run before had registered, and nothing in a
result file could show it. So init-models writes a start record into the answerer's start
folder (`sparring_model.json`, key `start`), every model trained from it carries the record on,
and the evaluate phase copies it into heldout.json, where the pairing and pooling lines check it.

Covers: `weights_digest` (sha256 over a folder's weight files, names and contents),
`model_digests` (a name or folder: its own weights and the base weights under it, through
pointers and an adapter's recorded base), `start_record`, `start_of` (the record a model folder
carries), `code_digest` (the whole library's source, hashed by `source_digest`: the code version
a result names), `check_start` and `check_same_starts` (the refusals, one line naming the run).
Does not cover: the registry (sparring.tracking) or loading weights (sparring.backends).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

META_FILE = "sparring_model.json"  # sparring.backends.base.META_FILE, without importing it
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".npz")
# what two starts must share to be one start (the seed and code are the study's to compare)
START_IDENTITY = ("configured", "model", "weights", "base_weights")


def weights_digest(folder: str | Path) -> str | None:
    """sha256 (hex, 16 characters) over the weight files of `folder` (relative name and
    contents, in name order); None when it holds none. Tokenizer and config files are left out:
    the question is which weights, not how they were packed."""
    root = Path(folder)
    if not root.is_dir():
        return None
    files = sorted(
        p for p in root.rglob("*")
        if p.is_file() and p.suffix in WEIGHT_SUFFIXES and p.name != "training_args.bin"
    )  # fmt: skip
    if not files:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(root)).encode() + b"\0")
        with f.open("rb") as stream:
            for chunk in iter(lambda: stream.read(1 << 22), b""):
                h.update(chunk)
        h.update(b"\0")
    return h.hexdigest()[:16]


def _meta(folder: Path) -> dict[str, Any] | None:
    meta = folder / META_FILE
    return json.loads(meta.read_text()) if meta.is_file() else None


def _local_folder(name: str) -> Path | None:
    """The folder holding a model name's weights: a path, a built-in's cache (built on first
    use), or a hub name already in the local Hugging Face cache; None when not on this machine."""
    if os.path.isdir(name):
        return Path(name)
    from sparring.backends.builtins import BUILTINS, builtin_dir

    if name in BUILTINS:
        return builtin_dir(name)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(name, local_files_only=True))
    except Exception:  # not cached here (a cluster task loads it at train time): unknown
        return None


def model_digests(name: str) -> tuple[str, str | None, str | None]:
    """(base name, digest of the weights `name` loads, digest of the base weights under them)
    for a base model name or a model folder. A pointer folder is followed to what it names; an
    adapter's base is the one its `sparring_model.json` records. A model whose weights are not
    on this machine has digest None."""
    folder = _local_folder(name)
    meta = _meta(folder) if folder is not None else None
    while meta is not None and meta.get("tuning_mode") == "base":  # a pointer: follow it
        target = str(meta.get("base") or "")
        folder = _local_folder(target) if target else None
        name, meta = target, (_meta(folder) if folder is not None else None)
    own = weights_digest(folder) if folder is not None else None
    if meta is None:  # plain weights: the base itself
        return name, own, own
    base = str(meta.get("base") or name)
    if meta.get("tuning_mode") == "full":
        return base, own, own
    _, base_own, _ = model_digests(base) if base != name else (base, None, None)
    return base, own, base_own


PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # src/sparring, not this module's folder


@functools.cache
def code_digest() -> str:
    """sha256 (16 hex) of the sparring package's own Python source (`source_digest` of the
    package folder): the code version a result names. Any edit to the library is another
    version, so runs compared as one study ran one."""
    return source_digest(PACKAGE_ROOT)


# the code a local run started at, handed to its phases' processes (sparring.local_run)
RUN_CODE_ENV = "SPARRING_RUN_CODE"


def code_drift(environ: Mapping[str, str] | None = None) -> str:
    """Why this process must not run a phase of a local run ('' when it may): the run started at
    the code `RUN_CODE_ENV` names and the package imported here is another. kfp.local starts
    each phase as a new process that imports the package as it is on disk then, so a source
    edited while a run goes on would make one run of two code versions under one record."""
    started = (os.environ if environ is None else environ).get(RUN_CODE_ENV, "")
    if not started or started == code_digest():
        return ""
    return (
        f"this phase would run code {code_digest()}, but its run started at code {started}: the "
        "sparring source changed while the run went on (one run is one code version); start "
        "the run again, or run it from a checkout nobody edits (a git worktree)"
    )


def checkout_mismatch(cwd: Path) -> str:
    """Why a command run in `cwd` would not run the code there ('' when it would, or when `cwd`
    holds no sparring checkout): `cwd` holds a src/sparring whose source differs from the
    package Python imports (an editable install of another checkout, say). A run would then
    file another checkout's code under this one's name."""
    here = cwd / "src" / "sparring"
    if not (here / "__init__.py").is_file() or source_digest(here) == code_digest():
        return ""
    return (
        f"this checkout's {here} is not the sparring package Python imports ({PACKAGE_ROOT}, "
        f"code {code_digest()}): run with PYTHONPATH={here.parent} or install this checkout "
        "(pip install -e .)"
    )


# the environment variables torch reads its CPU thread count from, at start
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


def torch_threads() -> int:
    """The CPU threads torch computes with in a process started with this environment (it reads
    OMP_NUM_THREADS, else counts the cores). Sampled completions depend on it: on 2 cores, 19 of
    64 completions of one seed differed between 1 and 2 threads (2026-12-03), the code and the
    seed the same, so a run's record names it and a rerun uses it."""
    import torch

    return int(torch.get_num_threads())


def cpu_capability() -> str:
    """The vector instruction set torch's CPU kernels use here ("AVX512", "AVX2", "DEFAULT"...):
    like the thread count, it can change sampled completions, so a run's record names it."""
    import torch

    return str(torch.backends.cpu.get_cpu_capability())


def cpu_warning(filed: Any, here: str) -> str:
    """Why a rerun on a CPU of `here`'s kind may not repeat a run filed on `filed`'s ('' when
    they match or the record predates the field).

    >>> cpu_warning("AVX512", "AVX2")
    'filed on an AVX512 CPU, rerun on an AVX2 one: sampled completions may differ'
    >>> cpu_warning("AVX512", "AVX512"), cpu_warning(None, "AVX2")
    ('', '')
    """
    if not isinstance(filed, str) or not filed or filed == here:
        return ""
    return f"filed on an {filed} CPU, rerun on an {here} one: sampled completions may differ"


def threads_env(environ: Mapping[str, str], threads: Any) -> dict[str, str]:
    """`environ` with torch's thread count set to `threads` (a filed run's `torch_threads`);
    unchanged when the record predates the field."""
    if not isinstance(threads, int) or threads < 1:
        return dict(environ)
    return {**environ, **{name: str(threads) for name in THREAD_VARS}}


def resume_refusal(state: Mapping[str, Any] | None, config_digest: str) -> str:
    """Why a local run's state (sparring.local_run: its config digest and code) cannot be
    continued by this config and this code ('' when it can). kfp.local's cache keys a task on
    its command and arguments, not on the package's code, so a phase finished by other code
    would come back as a hit."""
    if state is None:
        return "nothing to resume"
    if state.get("digest") != config_digest:
        return "config changed since the last run"
    if state.get("code") != code_digest():
        return f"code changed since the last run ({state.get('code')} -> {code_digest()})"
    return ""


def source_digest(root: Path) -> str:
    """sha256 (16 hex) over every .py file under `root`, names and contents."""
    h = hashlib.sha256()
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def start_record(
    configured: str,
    loaded: str,
    *,
    champion: Mapping[str, str] | None = None,
    seed: int = 0,
    training_seed: int = 0,
    folder: str | None = None,
) -> dict[str, Any]:
    """The start of a run's answerer: `configured` (models.answerer.name), `loaded` (what it
    actually starts from: that name, or `models:/NAME@ALIAS` for a champion, whose weights are
    in `folder`), the base under it and both digests, the champion {name, alias, version} or
    None, the seeds and the code version."""
    base, weights, base_weights = model_digests(folder or loaded)
    return {
        "configured": configured,
        "model": loaded,
        "base": base,
        "weights": weights,
        "base_weights": base_weights,
        "champion": dict(champion) if champion else None,
        "seed": seed,
        "training_seed": training_seed,
        "code": code_digest(),
    }


def start_of(model_dir: str | None) -> dict[str, Any] | None:
    """The start record a model folder carries (init-models wrote it; training carries it on);
    None for a folder of older code, a plain name or no folder."""
    if not model_dir or not os.path.isdir(model_dir):
        return None
    meta = _meta(Path(model_dir))
    start = (meta or {}).get("start")
    return dict(start) if isinstance(start, Mapping) else None


def check_start(name: str, start: Any) -> Mapping[str, Any]:
    """A run's start record (a heldout.json's `start`), checked to be its configured base
    model: a ValueError naming the run when there is none (older code: its start is unknown),
    it started from a registry champion, or it loaded another model than its config names."""
    if not isinstance(start, Mapping):
        raise ValueError(
            f"{name}: records no start (a run of code before start records), so whether it "
            "trained from its configured base model is unknown; run it again"
        )
    champion = start.get("champion")
    if champion:
        raise ValueError(
            f"{name}: started from the champion {champion.get('name')}@{champion.get('alias')} "
            f"(version {champion.get('version')}), not from its configured base model "
            f"{start.get('configured')}: a chained run compares against nothing it asked for "
            "(storage.start_fresh: true starts from the base)"
        )
    if start.get("model") != start.get("configured"):
        raise ValueError(
            f"{name}: started from {start.get('model')}, not from its configured base model "
            f"{start.get('configured')}"
        )
    return start


def check_same_starts(runs: Sequence[tuple[str, Any]]) -> None:
    """ValueError naming the runs unless every (run name, start record) pair (a typed heldout
    record's `start`) started fresh (`check_start`) from one and the same model and weights."""
    starts = [(name, check_start(name, start)) for name, start in runs]
    for name, start in starts[1:]:
        first_name, first = starts[0]
        differs = [k for k in START_IDENTITY if start.get(k) != first.get(k)]
        if differs:
            shown = ", ".join(f"{k} {start.get(k)} against {first.get(k)}" for k in differs)
            raise ValueError(
                f"{name} and {first_name} started from different models ({shown}): "
                "their gains cannot be paired or pooled"
            )
