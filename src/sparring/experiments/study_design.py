"""A study as data: configs/study/<name>.yaml, read and checked into a `StudyDesign`.

Covers: the file's fields (its base config, the overrides every arm shares, each arm's `--set`
overrides and what it is, its contrasts: treatment, control, rank and question, its training
seeds, its measures: a held-out set of heldout.json in one of its measures, and where its runs
are tracked and its report and figure go, or, for a study whose runs are compared by another
command, that command as its `analysis`: then no contrast or measure between runs),
`load_design` (a mistake is one ConfigError line naming the file and the field, with the fix),
a run's name and overrides
(`StudyDesign.run_name`, `StudyDesign.overrides`).
Does not cover: running the arms (sparring.experiments.study_runner), the statistics
(sparring.experiments.study), whether an arm's overrides load on the base config (the runner's
plan loads each and names the arm that does not).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.config.checks import NO_CONTRASTS
from sparring.config.fields import ConfigError
from sparring.config.load import read_yaml
from sparring.evaluation.heldout import OWN_MEASURE, STORED_MEASURES
from sparring.evaluation.learning import HELDOUT_LINES
from sparring.evaluation.study_pairs import contrasts_text

# what the runner sets on every run itself: neither an arm nor --set may move them
RUNNER_FIELDS = (
    "name", "training_seed", "storage.start_fresh", "tracking.experiment", "tracking.study",
    "tracking.arm", "tracking.contrasts",
)  # fmt: skip
RANKS = ("primary", "secondary")
MEASURE_NAMES = (OWN_MEASURE, *STORED_MEASURES)
FIELDS = (
    "name", "issue", "base", "experiment", "run_prefix", "report", "figure", "seeds", "common",
    "arms", "contrasts", "measures", "analysis",
)  # fmt: skip
KEY_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
NAME = re.compile(r"[A-Za-z0-9][\w.-]*")
ARM_NAME = re.compile(r"[A-Za-z]\w*")


@dataclass(frozen=True)
class Arm:
    """One arm: its `--set` overrides of the base config, what it is, in words, and its
    training seeds when it runs fewer than the study's (empty: all of them)."""

    name: str
    overrides: tuple[str, ...]
    what: str = ""
    seeds: tuple[int, ...] = ()


@dataclass(frozen=True)
class Contrast:
    """The treatment's mean minus the control's, its rank and the question it answers."""

    treatment: str
    control: str
    rank: str
    question: str

    @property
    def label(self) -> str:
        return f"{self.treatment}-{self.control}"


@dataclass(frozen=True)
class Measure:
    """What the report measures: a held-out `set_name` of heldout.json in `measure`, over the
    family instances of one `level` only when it names one (None: every problem of the set)."""

    label: str
    set_name: str
    measure: str
    level: int | None = None


@dataclass(frozen=True)
class StudyDesign:
    """A study's file, checked. `arms` keeps the file's order (the order the runs go in)."""

    name: str
    path: str
    base: str
    arms: dict[str, Arm]
    contrasts: tuple[Contrast, ...]
    seeds: tuple[int, ...]
    measures: tuple[Measure, ...]
    common: tuple[str, ...] = ()
    issue: int | None = None
    experiment: str = ""
    run_prefix: str = ""
    report: str = ""
    figure: str = ""
    # the command that compares the runs when no contrast is between them (the selection
    # study's runs are sources and answerers; `sparring precheck select-report` compares them)
    analysis: str = ""

    def run_name(self, arm: str, seed: int) -> str:
        return f"{self.run_prefix}-{arm}-t{seed}"

    def runs_seed(self, arm: str, seed: int) -> bool:
        """Whether `arm` runs training seed `seed` (an arm's own `seeds`, else the study's)."""
        return seed in (self.arms[arm].seeds or self.seeds)

    def overrides(
        self, arm: str, seed: int, extra: tuple[str, ...] | list[str] = ()
    ) -> tuple[str, ...]:
        """The `--set` overrides of one run: its name and training seed, a fresh start from the
        base model (whatever the config says), the study's MLflow experiment, the study, the
        run's arm and the planned contrasts (tracking.study, .arm, .contrasts: its LEARN lines
        pair it only with a planned contrast's runs, sparring.evaluation.study_pairs), what
        every arm shares (`common`), the arm's own, then `extra` (a ConfigError when one moves
        what the runner sets)."""
        for text in extra:
            key = text.partition("=")[0].strip()
            if key in RUNNER_FIELDS:
                raise ConfigError(f"--set {text}: the study sets {key} of every run itself")
        planned = contrasts_text((c.treatment, c.control) for c in self.contrasts) or NO_CONTRASTS
        return (
            f"name={self.run_name(arm, seed)}",
            f"training_seed={seed}",
            "storage.start_fresh=true",
            f"tracking.experiment={self.experiment}",
            # quoted: YAML would read a study named 2026-12-02 as a date, an arm `on` as true
            f'tracking.study="{self.name}"',
            f'tracking.arm="{arm}"',
            f'tracking.contrasts="{planned}"',
            *self.common,
            *self.arms[arm].overrides,
            *extra,
        )


def load_design(path: str | Path) -> StudyDesign:
    """Read and check a study file; a ConfigError naming the file and the field otherwise."""
    data = read_yaml(path)
    return design_from_dict(data, str(path))


def design_from_dict(data: dict[str, Any], path: str = "study") -> StudyDesign:
    """The design of a study file's parsed mapping; ConfigError `<path>: <field>: ...`."""

    def fail(where: str, why: str) -> ConfigError:
        return ConfigError(f"{path}: {where}: {why}")

    unknown = [k for k in data if k not in FIELDS]
    if unknown:
        raise fail(unknown[0], f"not a study field (a study has: {', '.join(FIELDS)})")
    name = _text(data, "name", fail)
    if not NAME.fullmatch(name):
        raise fail("name", f"{name!r}: use letters, digits, '.', '-' and '_'")
    base = _text(data, "base", fail)
    if not Path(base).is_file():
        raise fail("base", f"{base}: no such config file (a path from the repository root)")
    seeds = _seeds(data.get("seeds"), fail)
    arms = _arms(data.get("arms"), seeds, fail)
    analysis = _text(data, "analysis", fail, "") if data.get("analysis") is not None else ""
    if analysis:
        for key in ("contrasts", "measures"):
            if data.get(key):
                raise fail(
                    key,
                    f"the study's runs are compared by its analysis ({analysis}); "
                    f"drop {key}, or drop analysis to compare the runs' held-out files",
                )
    return StudyDesign(
        name=name,
        path=path,
        base=base,
        arms=arms,
        contrasts=() if analysis else _contrasts(data.get("contrasts"), arms, fail),
        seeds=seeds,
        measures=() if analysis else _measures(data.get("measures"), fail),
        common=_overrides(data.get("common", []), "common", fail),
        issue=_issue(data.get("issue"), fail),
        experiment=_text(data, "experiment", fail, f"sparring-study-{name}"),
        run_prefix=_text(data, "run_prefix", fail, f"study-{name}"),
        report=_text(data, "report", fail, f"docs/results/study-{name}.json"),
        figure=_text(data, "figure", fail, f"docs/img/study-{name}.png"),
        analysis=analysis,
    )


def _text(data: dict[str, Any], key: str, fail: Any, default: str | None = None) -> str:
    value = data.get(key, default)
    if value is None:
        raise fail(key, "missing; give it")
    if not isinstance(value, str) or not value.strip():
        raise fail(key, f'{value} is not text; quote it, e.g. {key}: "{value}"')
    return value.strip()


def _issue(value: Any, fail: Any) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise fail("issue", f"{value!r} is not an issue number")
    return value


def _overrides(value: Any, where: str, fail: Any) -> tuple[str, ...]:
    """A list of `key.path=value` overrides, none of a field the runner sets, none twice."""
    if not isinstance(value, list):
        raise fail(where, f"{value!r} is not a list of key.path=value overrides")
    seen: set[str] = set()
    for i, text in enumerate(value):
        at = f"{where}[{i}]"
        if not isinstance(text, str):
            raise fail(at, f"{text!r} is not a key.path=value override (quote it)")
        key, sep, _ = text.partition("=")
        key = key.strip()
        if not sep or not KEY_PATH.fullmatch(key):
            raise fail(at, f"{text!r} is not key.path=value, e.g. data.given_tests=0")
        if key in RUNNER_FIELDS:
            raise fail(at, f"{text!r}: the study sets {key} of every run itself; leave it out")
        if key in seen:
            raise fail(at, f"{text!r}: {key} is set twice; keep one")
        seen.add(key)
    return tuple(value)


def _arms(value: Any, seeds: tuple[int, ...], fail: Any) -> dict[str, Arm]:
    if not isinstance(value, dict) or not value:
        raise fail("arms", "no arm: give at least one, e.g. G: {set: [phase_schedule=answerer]}")
    arms = {}
    for name, body in value.items():
        where = f"arms.{name}"
        if not isinstance(name, str) or not ARM_NAME.fullmatch(name):
            raise fail(where, "an arm's name is a letter, then letters, digits or '_'")
        if not isinstance(body, dict):
            raise fail(where, "give {set: [key.path=value, ...], what: ...}")
        extra = [k for k in body if k not in ("set", "what", "seeds")]
        if extra:
            raise fail(f"{where}.{extra[0]}", "not an arm field (an arm has: set, what, seeds)")
        what = body.get("what", "")
        if not isinstance(what, str):
            raise fail(f"{where}.what", f"{what!r} is not text")
        own = _seeds(body["seeds"], fail, f"{where}.seeds") if "seeds" in body else ()
        if set(own) - set(seeds):
            raise fail(
                f"{where}.seeds",
                f"{sorted(set(own) - set(seeds))} not among the study's seeds {list(seeds)}: "
                "an arm runs some of them",
            )
        overrides = _overrides(body.get("set", []), f"{where}.set", fail)
        arms[name] = Arm(name, overrides, what, own)
    return arms


def _contrasts(value: Any, arms: dict[str, Arm], fail: Any) -> tuple[Contrast, ...]:
    if not isinstance(value, list) or not value:
        raise fail(
            "contrasts", "no contrast: give at least one {treatment, control, rank, question}"
        )
    out: list[Contrast] = []
    for i, body in enumerate(value):
        where = f"contrasts[{i}]"
        if not isinstance(body, dict):
            raise fail(where, "give {treatment: ARM, control: ARM, rank: primary, question: ...}")
        extra = [k for k in body if k not in ("treatment", "control", "rank", "question")]
        if extra:
            raise fail(
                f"{where}.{extra[0]}", "not a contrast field (treatment, control, rank, question)"
            )
        for key in ("treatment", "control"):
            arm = body.get(key)
            if arm not in arms:
                raise fail(f"{where}.{key}", f"{arm!r} is not an arm ({', '.join(arms)})")
        if body["treatment"] == body["control"]:
            raise fail(where, f"{body['treatment']} against itself: pick two arms")
        rank = body.get("rank")
        if rank not in RANKS:
            raise fail(f"{where}.rank", f"{rank!r} is not one of {', '.join(RANKS)}")
        question = body.get("question")
        if not isinstance(question, str) or not question.strip():
            raise fail(f"{where}.question", "say what the contrast asks")
        contrast = Contrast(body["treatment"], body["control"], rank, question.strip())
        if any(c.label == contrast.label for c in out):
            raise fail(where, f"{contrast.label} is planned twice; keep one")
        out.append(contrast)
    return tuple(out)


def _seeds(value: Any, fail: Any, where: str = "seeds") -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise fail(where, "no training seed: give a list, e.g. [1, 2, 3]")
    for i, seed in enumerate(value):
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 1:
            raise fail(f"{where}[{i}]", f"{seed!r} is not a training seed of 1 or more")
    if len(set(value)) < len(value):
        raise fail(where, f"{value}: a seed twice; each seed once")
    return tuple(value)


def _measures(value: Any, fail: Any) -> tuple[Measure, ...]:
    if not isinstance(value, list) or not value:
        raise fail(
            "measures",
            "none: give at least {label: new_tasks, set: new_tasks, measure: discriminating}",
        )
    out: list[Measure] = []
    for i, body in enumerate(value):
        where = f"measures[{i}]"
        keys = set(body) if isinstance(body, dict) else set()
        if not {"label", "set", "measure"} <= keys <= {"label", "set", "measure", "level"}:
            raise fail(
                where,
                "give {label: ..., set: <held-out set>, measure: <measure>} and, to measure one "
                "family level only, level: <0-3>",
            )
        label, set_name, measure = body["label"], body["set"], body["measure"]
        level = body.get("level")
        if level is not None and (not isinstance(level, int) or isinstance(level, bool)):
            raise fail(f"{where}.level", f"{level!r}: give a family level, e.g. level: 2")
        if not isinstance(label, str) or not NAME.fullmatch(label):
            raise fail(f"{where}.label", f"{label!r}: use letters, digits, '.', '-' and '_'")
        if any(m.label == label for m in out):
            raise fail(f"{where}.label", f"{label} twice; give each measure its own label")
        if set_name not in HELDOUT_LINES:
            raise fail(
                f"{where}.set", f"{set_name!r} is not a held-out set ({', '.join(HELDOUT_LINES)})"
            )
        if measure not in MEASURE_NAMES:
            raise fail(f"{where}.measure", f"{measure!r} is not one of {', '.join(MEASURE_NAMES)}")
        out.append(Measure(label, set_name, measure, level))
    return tuple(out)
