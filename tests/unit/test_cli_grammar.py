"""One CLI grammar (issue 75, item 4), checked over the whole `sparring` argparse tree: every
command and subcommand has a description and a help line, every option has help text; the config
file is given as `--config FILE` (`-c`) wherever a command takes one, and its help never promises
defaults where the command requires it; `--set` means a config override wherever it is not an
old spelling; the old spellings (`config validate FILE`, `eval control|pool --set NAME`,
`reward --batch FILE`, `calibrate --samples N`) still work, each with one deprecation line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from sparring.cli.common import Deprecated
from sparring.cli.main import build_parser, main

ROOT = Path(__file__).resolve().parents[2]


def commands(
    parser: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser, str | None]]:
    """(command path, its parser, its help line in the parent's list) for every (sub)command."""
    parser = parser or build_parser()
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append(((*path, name), sub, helps.get(name)))
                found.extend(commands(sub, (*path, name)))
    return found


COMMANDS = commands()
IDS = [" ".join(path) for path, _, _ in COMMANDS]


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in parser._actions
        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction))
    ]


def test_the_tree_is_walked():
    names = set(IDS)
    assert {"compile", "run", "submit", "config validate", "eval control", "reward"} <= names
    assert len(COMMANDS) > 30


@pytest.mark.parametrize(("path", "parser", "help_line"), COMMANDS, ids=IDS)
def test_every_command_has_a_description_and_a_help_line(path, parser, help_line):
    assert (parser.description or "").strip(), f"sparring {' '.join(path)}: no description"
    assert (help_line or "").strip(), f"sparring {' '.join(path)}: no help line in its group"


@pytest.mark.parametrize(("path", "parser", "help_line"), COMMANDS, ids=IDS)
def test_every_option_has_help_text(path, parser, help_line):
    for action in _options(parser):
        name = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"sparring {' '.join(path)} {name}: no help"


@pytest.mark.parametrize(("path", "parser", "help_line"), COMMANDS, ids=IDS)
def test_the_config_is_given_one_way(path, parser, help_line):
    for action in _options(parser):
        if action.dest == "config":
            assert {"--config", "-c"} <= set(action.option_strings), path
            needed = action.required or "required" in action.help
            assert not (needed and "defaults are used" in action.help), (path, action.help)
        if "--set" in action.option_strings and not isinstance(action, Deprecated):
            assert action.dest == "overrides", f"{path}: --set means a config override"


@pytest.mark.parametrize(("path", "parser", "help_line"), COMMANDS, ids=IDS)
def test_one_meaning_per_flag_name(path, parser, help_line):
    """--batch is a switch (infer), --samples a file (eval humaneval), --set an override:
    any other use is an old spelling."""
    for action in _options(parser):
        if isinstance(action, Deprecated):
            continue
        if "--batch" in action.option_strings:
            assert action.nargs == 0, f"{path}: --batch takes no value"
        if "--samples" in action.option_strings:
            assert action.type is None, f"{path}: --samples names a file"


def _warned(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert len(warnings) == 1 and "deprecated" in warnings[0], err
    return code, out, warnings[0]


def test_config_validate_takes_the_old_positional_with_a_warning(capsys):
    smoke = str(ROOT / "configs" / "smoke.yaml")
    code, out, warning = _warned(capsys, ["config", "validate", smoke])
    assert code == 0 and ": valid (" in out and "--config" in warning
    assert main(["config", "validate", "--config", smoke]) == 0
    assert capsys.readouterr().err == ""


def _heldout(path: Path, reward: str, final: float) -> str:
    from sparring.evaluation.heldout import heldout_record

    start = {"configured": "smollm2-135m", "model": "smollm2-135m", "base": "smollm2-135m",
             "weights": "w0", "base_weights": "w0", "champion": None}  # fmt: skip
    pairs = {f"p{i}": [0.2, final] for i in range(4)}
    record = heldout_record({"new_tasks": pairs}, {}, reward=reward, seed=0, config_digest="d1",
                            start=start)  # fmt: skip
    path.write_text(json.dumps(record))
    return str(path)


def test_eval_heldout_set_and_its_old_spelling(tmp_path, capsys):
    treat = _heldout(tmp_path / "t.json", "honest", 0.6)
    ctrl = _heldout(tmp_path / "c.json", "format_only", 0.3)
    assert main(["eval", "control", treat, ctrl, "--heldout-set", "new_tasks"]) == 0
    new, err = capsys.readouterr()
    assert err == "" and "LEARN" in new
    code, old, warning = _warned(capsys, ["eval", "control", treat, ctrl, "--set", "new_tasks"])
    assert code == 0 and old == new and "--heldout-set" in warning


def test_reward_batch_is_the_old_spelling_of_solutions(tmp_path, capsys):
    from sparring.problems import load_bundled

    problem = load_bundled()[0]
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"problem_id": problem.id, "solution": "x"}) + "\n")
    assert main(["reward", "--solutions", str(path), "--json"]) == 0
    new, err = capsys.readouterr()
    assert err == ""
    code, old, warning = _warned(capsys, ["reward", "--batch", str(path), "--json"])
    assert code == 0 and old == new and "--solutions" in warning


def test_calibrate_samples_is_the_old_spelling(capsys):
    args = build_parser().parse_args(["calibrate", "--samples", "3"])
    assert args.samples == 3 and "--samples-per-instance" in capsys.readouterr().err
    assert build_parser().parse_args(["calibrate", "--samples-per-instance", "5"]).samples == 5
