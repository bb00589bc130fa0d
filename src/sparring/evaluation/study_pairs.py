"""Which two pipeline runs a LEARN pairing line may pair when either is a study's run: only
the contrasts the study planned.

Covers: `contrasts_text` (a study's contrasts as the one-line config value
`tracking.contrasts`, "D-F,S-G": what the study runner records on every run, so a run says
what was planned when it ran, whatever the study file says later) and `pairing_refusal`
(given the params two runs logged, why they may not be paired, or "" when they may).
A run outside any study pairs as it always did: one config field apart is enough.
Does not cover: finding the candidates and printing the lines (sparring.local_run), the
study's file (sparring.experiments.study_design), reading and checking the tracking.* study
fields (sparring.config.checks). Pure: plain strings in and out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sparring.config.checks import parse_contrasts


def contrasts_text(pairs: Iterable[tuple[str, str]]) -> str:
    """`treatment-control` pairs as one value.

    >>> contrasts_text([("D", "F"), ("S", "G")])
    'D-F,S-G'
    """
    return ",".join(f"{treatment}-{control}" for treatment, control in pairs)


def pairing_refusal(mine: Mapping[str, str], theirs: Mapping[str, str], run: str) -> str:
    """Why the run whose logged params are `theirs` (named `run` in the message) may not be
    paired with this one (`mine`), or "" when it may: either in a study, both must be in the
    same one, their arms a contrast `mine`'s tracking.contrasts planned, in either order.

    >>> d = {"tracking.study": "s1", "tracking.arm": "D", "tracking.contrasts": "D-F"}
    >>> pairing_refusal(d, {**d, "tracking.arm": "F"}, "run r")
    ''
    >>> pairing_refusal(d, {**d, "tracking.arm": "B"}, "run r")
    'run r (arm B) is not a planned contrast of arm D in study s1; skipped'
    >>> pairing_refusal({}, {}, "run r")
    ''
    """
    study, their_study = mine.get("tracking.study", ""), theirs.get("tracking.study", "")
    if not study and not their_study:
        return ""
    if study != their_study:

        def of(name: str) -> str:
            return f"of study {name}" if name else "of no study"

        return f"{run} is a run {of(their_study)}, this one {of(study)}; skipped"
    arm, their_arm = mine.get("tracking.arm", ""), theirs.get("tracking.arm", "")
    planned = parse_contrasts(mine.get("tracking.contrasts", ""))
    if (arm, their_arm) in planned or (their_arm, arm) in planned:
        return ""
    planned_text = f"is not a planned contrast of arm {arm} in study {study}"
    return f"{run} (arm {their_arm}) {planned_text}; skipped"


def same_arm(mine: Mapping[str, str], theirs: Mapping[str, str]) -> bool:
    """Whether two runs are one arm of one study, or both of none: what pools over training
    seeds (an arm's seeds differ in training_seed alone, which a run outside the study may too).

    >>> d = {"tracking.study": "s1", "tracking.arm": "D"}
    >>> same_arm(d, dict(d)), same_arm(d, {}), same_arm({}, {})
    (True, False, True)
    """
    return all(mine.get(k, "") == theirs.get(k, "") for k in ("tracking.study", "tracking.arm"))
