"""Inference with a trained answerer: the seed's command line (`sparring infer`) as a library.

Covers: resolving a checkpoint (a built-in name, a local HF or Sparring model folder, or
`models:/NAME@ALIAS` from the MLflow model registry), reading problems (free text with an optional
signature and `;`-separated tests, or a JSON problems file in the bundled format or a plain list),
generating with the answerer prompt (direct, or the reasoning stages), extracting the code, and
optionally running the tests in Sparring's sandbox. One result dict per problem:
{"problem", "signature", "completion", "code", "tests", "results", "passed", "total"}.

Does not cover: training, or evaluation metrics (sparring.evaluation).
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from sparring.errors import SparringError
from sparring.problems import Problem, function_name_of
from sparring.records import read_records


class InferenceError(SparringError, ValueError):
    """Bad inference input: the message names what is missing and how to give it."""


def split_tests(text: str | None) -> list[str]:
    """`"assert f(1)==2;assert f(';')==0"` -> two tests: split on `;` where the pieces parse.

    >>> split_tests("assert add(2,3)==5;assert add(0,0)==0")
    ['assert add(2,3)==5', 'assert add(0,0)==0']
    >>> split_tests("assert f(';') == 1; assert f('a') == 0")
    ["assert f(';') == 1", "assert f('a') == 0"]
    """
    if not text or not text.strip():
        return []
    tests, buffer = [], ""
    for piece in text.split(";"):
        buffer = f"{buffer};{piece}" if buffer else piece
        try:
            ast.parse(buffer.strip())
        except SyntaxError:
            continue
        if buffer.strip():
            tests.append(buffer.strip())
        buffer = ""
    if buffer.strip():
        tests.append(buffer.strip())  # does not parse: kept, the sandbox reports it invalid
    return tests


_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")


def _name_from_tests(tests: Sequence[str]) -> str:
    skip = {
        "assert",
        "abs",
        "len",
        "sorted",
        "set",
        "list",
        "tuple",
        "str",
        "int",
        "float",
        "all",
        "any",
        "round",
        "isinstance",
        "sum",
        "max",
        "min",
    }
    for test in tests:
        for name in _CALL.findall(test):
            if name not in skip:
                return name
    return ""


def make_problem(
    description: str,
    signature: str = "",
    tests: Sequence[str] = (),
    problem_id: str = "problem",
    reference: str = "",
) -> Problem:
    """A Problem from free text; without a signature the function name comes from the tests.
    `reference`: a reference solution (what `--choose-by` validates a source's tests against)."""
    if not description or not description.strip():
        raise InferenceError("the problem text is empty; pass --problem TEXT or --problem-file")
    signature = signature.strip()
    if not signature:
        name = _name_from_tests(tests)
        signature = f"def {name}(...):" if name else ""
    return Problem(
        id=problem_id,
        description=description.strip(),
        function_signature=signature,
        baseline_tests=list(tests),
        reference_solution=reference,
    )


def read_problems_file(path: str | Path) -> list[Problem]:
    """Problems from a JSON or JSON Lines file, read as every problems file is
    (sparring.records: a list, {"problems": [...]}, or one problem per line); each item is a
    full problem record or a lighter {"description" | "problem", "function_signature" |
    "signature", "baseline_tests" | "tests" (list or `;` string), "reference_solution"}, or a
    string."""
    items = read_records(path, "problems", InferenceError, "problems file")
    if not items:
        raise InferenceError(
            f"{path}: holds no problems; one per line (JSONL) or a JSON list or "
            '{"problems": [...]}'
        )
    problems = []
    for i, (label, item) in enumerate(items):
        if isinstance(item, str):
            item = {"description": item}
        if not isinstance(item, dict):
            raise InferenceError(f"{label}: expected an object or a string")
        tests = item.get("baseline_tests", item.get("tests", []))
        if isinstance(tests, str):
            tests = split_tests(tests)
        description = item.get("description", item.get("problem", ""))
        if not isinstance(description, str) or not description.strip():
            raise InferenceError(f"{label}: missing 'description' (or 'problem')")
        problems.append(
            make_problem(
                description,
                str(item.get("function_signature", item.get("signature", "")) or ""),
                [str(t) for t in tests],
                str(item.get("id", f"problem-{i + 1}")),
                str(item.get("reference_solution", "") or ""),
            )
        )
    return problems


def resolve_checkpoint(checkpoint: str, tracking_uri: str | None = None) -> str:
    """A name or folder load_model accepts; `models:/NAME@ALIAS` (or `models:/NAME/VERSION`) is
    downloaded from the MLflow registry into the Sparring cache first."""
    if not checkpoint or not checkpoint.strip():
        raise InferenceError("--checkpoint is empty; pass a folder, a built-in name or models:/…")
    if not checkpoint.startswith("models:/"):
        if checkpoint.startswith((".", "/", "~")) and not Path(checkpoint).expanduser().exists():
            raise InferenceError(f"checkpoint {checkpoint}: no such folder")
        return (
            str(Path(checkpoint).expanduser())
            if Path(checkpoint).expanduser().exists()
            else checkpoint
        )
    import mlflow
    from mlflow.exceptions import MlflowException

    # Passed to the call, never set: mlflow.set_tracking_uri would also rewrite this process's
    # MLFLOW_TRACKING_URI, redirecting every later run of the caller to the registry's server.
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or None
    safe = re.sub(r"[^A-Za-z0-9_.@-]+", "_", checkpoint[len("models:/") :])
    base = Path(os.environ.get("SPARRING_CACHE", Path.home() / ".cache" / "sparring"))
    dst = base / "registry" / safe
    dst.mkdir(parents=True, exist_ok=True)
    try:
        source = _registry_source(checkpoint, uri)
        got = mlflow.artifacts.download_artifacts(
            artifact_uri=source, dst_path=str(dst), tracking_uri=uri
        )
    except MlflowException as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise InferenceError(f"{checkpoint}: cannot download from MLflow ({first})") from None
    return str(_model_folder(Path(got)))


def _registry_source(checkpoint: str, uri: str | None) -> str:
    """The artifact URI a `models:/NAME@ALIAS`, `models:/NAME/VERSION` or `models:/NAME/latest`
    points to, looked up in the registry at `uri`. Resolved here because MLflow 3's models:/
    download looks the name up in the process-wide registry, ignoring the registry_uri it is
    given."""
    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    ref = checkpoint[len("models:/") :].strip("/")
    if "@" in ref:
        name, alias = ref.split("@", 1)
        version = client.get_model_version_by_alias(name, alias).version
    elif "/" in ref:
        name, version = ref.rsplit("/", 1)
        if version == "latest":
            found = client.search_model_versions(f"name = '{name}'")
            if not found:
                raise MlflowException(f"registered model {name} has no versions")
            version = str(max(int(v.version) for v in found))
        elif not version.isdigit():
            raise InferenceError(
                f"{checkpoint}: expected models:/NAME@ALIAS, models:/NAME/VERSION or "
                "models:/NAME/latest"
            )
    else:
        raise InferenceError(
            f"{checkpoint}: name an alias or a version, e.g. models:/{ref}@champion"
        )
    return client.get_model_version_download_uri(name, version)


def _model_folder(root: Path) -> Path:
    """The folder inside a download that holds the model (config, adapter or Sparring meta)."""
    markers = ("sparring_model.json", "config.json", "adapter_config.json")
    if any((root / m).is_file() for m in markers):
        return root
    for marker in markers:
        found = sorted(root.rglob(marker))
        if found:
            return found[0].parent
    return root


def result_record(
    problem: Problem, completion: str, code: str, report: Any | None
) -> dict[str, Any]:
    """The output record of one problem (results empty and passed None when not executed)."""
    results = []
    if report is not None:
        results = [
            {"test": r.test, "outcome": r.outcome, "passed": r.passed, "detail": r.detail}
            for r in report.results
        ]
    return {
        "problem": problem.description,
        "signature": problem.function_signature,
        "completion": completion,
        "code": code,
        "tests": list(problem.baseline_tests),
        "results": results,
        "passed": (report.passed if report is not None else None),
        "total": len(problem.baseline_tests),
    }


def solve(
    checkpoint: str,
    problems: Sequence[Problem],
    *,
    execute_tests: bool = False,
    device: str = "auto",
    max_tokens: int = 512,
    temperature: float = 0.7,
    top_p: float = 0.9,
    stages: Sequence[str] = ("code",),
    seed: int = 0,
    tracking_uri: str | None = None,
    limits: Any = None,
    samples: int = 1,
    choose: Callable[[Sequence[Problem], list[list[str]]], list[dict[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """Generate one answer per problem with a checkpoint and (optionally) run its tests. With
    `samples` N > 1 and `choose` (problems, their N completions each -> per problem a choice
    with the index of the answer it returns under "chosen"), the chosen answer is the one
    returned, the choice and all N completions beside it (`choice`, `samples`); without
    `choose`, the first."""
    from sparring.backends.sampler import FEW, load_answerer, sample_answers
    from sparring.problems.programs import extract_code

    if not problems:
        raise InferenceError("no problems to solve")
    answerer = load_answerer(resolve_checkpoint(checkpoint, tracking_uri), device=device)
    completions = sample_answers(
        answerer,
        problems,
        stages=stages,
        max_new_tokens=max_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=seed,
        num_samples=samples,
        label="infer",
    ).texts
    choices = choose(problems, [list(c) for c in completions]) if choose else None
    picked = [c["chosen"] for c in choices] if choices else [0] * len(problems)
    texts = [c[i] if c else "" for c, i in zip(completions, picked, strict=True)]
    codes = [
        extract_code(text, function_name_of(p.function_signature)) or extract_code(text) or ""
        for p, text in zip(problems, texts, strict=True)
    ]
    reports: list[Any] = [None] * len(problems)
    if execute_tests:
        from sparring.evaluation.humaneval import run_jobs
        from sparring.sandbox.limits import trusted_limits

        jobs = [(code, list(p.baseline_tests)) for p, code in zip(problems, codes, strict=True)]
        reports = run_jobs(jobs, limits or trusted_limits())
        if len(problems) > FEW:
            from sparring import progress

            passed = sum(r.passed == r.total > 0 for r in reports)
            progress.say(f"infer tests run: {passed}/{len(problems)} problems pass all")
    records = [
        result_record(p, text, code, report)
        for p, text, code, report in zip(problems, texts, codes, reports, strict=True)
    ]
    if choices:
        for record, choice, outs in zip(records, choices, completions, strict=True):
            record.update(choice=choice, samples=list(outs))
    return records


def format_result(record: dict[str, Any], show_reasoning: bool = True) -> str:
    """Human-readable text of one result (only the code with show_reasoning=False)."""
    lines = [f"Problem: {record['problem']}"]
    if record["signature"]:
        lines.append(f"Signature: {record['signature']}")
    if show_reasoning:
        lines += ["", "Completion:", record["completion"].rstrip()]
    lines += ["", "Code:", record["code"].rstrip() or "(no code could be extracted)"]
    if record.get("choice"):
        c = record["choice"]
        kept = ", ".join(f"{s} {len(t['kept'])}" for s, t in c["tests"].items()) or "none"
        lines += [
            "",
            f"Chosen: answer {c['chosen']} of {len(record['samples'])} by {c['rule']} "
            f"(tied: {c['tied']}; tests kept: {kept}"
            + ("; no answer passed the problem's tests, all were candidates)" if c["fallback"]
               else ")"),
        ]  # fmt: skip
    if record["results"]:
        lines += ["", f"Tests: {record['passed']}/{record['total']} passed"]
        for r in record["results"]:
            mark = "PASS" if r["passed"] else r["outcome"].upper()
            detail = f"  ({r['detail'][:120]})" if r["detail"] and not r["passed"] else ""
            lines.append(f"  [{mark}] {r['test']}{detail}")
    return "\n".join(lines)
