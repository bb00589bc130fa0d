"""Progress lines: the console shows Sparring's lines, the log keeps everything."""

import io
import threading
import time

from sparring import progress


def test_console_filter_passes_only_marked_lines_and_logs_everything():
    console, log = io.StringIO(), io.StringIO()
    out = progress.ConsoleFilter(console, log)
    out.write('    Got executor_input: {"config_yaml": "name: x"}\n    [sparring] 10:00:00 r1 ')
    out.write("train-answerer: start\nnoise\n")
    assert console.getvalue() == "[sparring] 10:00:00 r1 train-answerer: start\n"
    assert "executor_input" in log.getvalue() and "noise" in log.getvalue()


def test_step_callback_prints_one_line_per_logged_step(capsys):
    from types import SimpleNamespace

    progress.LABEL = "r2 train-answerer"
    cb = progress.step_callback(total_steps=4)
    logs = {"reward": 0.25, "sparring/useful_group_share": 0.5, "completions/clipped_ratio": 0.0}
    cb.on_log(None, SimpleNamespace(global_step=1), None, logs={**logs, "grad_norm": 0.12})
    cb.on_log(None, SimpleNamespace(global_step=1), None, logs={"train_runtime": 3.0})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith(progress.MARK)
    assert "r2 train-answerer step 1/4 reward=0.250 useful_groups=0.50 clipped=0.00" in lines[0]
    assert "grad_norm=0.12" in lines[0] and "left~" in lines[0]


def test_brief_keeps_the_numbers_that_matter():
    assert progress.brief({"reward": 0.5, "model": "x", "useful_group_share": 1}) == (
        "reward=0.5 useful_group_share=1"
    )


def test_step_callback_shows_the_loss_of_a_supervised_step(capsys):
    from types import SimpleNamespace

    cb = progress.step_callback(total_steps=16, label="r0 warm-start")
    cb.on_log(None, SimpleNamespace(global_step=2), None, logs={"loss": 0.75, "grad_norm": 1.5})
    line = capsys.readouterr().out.strip()
    assert "r0 warm-start step 2/16 loss=0.750 grad_norm=1.5 left~" in line


RUN_LOG = """\
12:00:01.000 - INFO - Executing task \x1b[96m'materialize'\x1b[0m
12:00:05.000 - INFO - Task \x1b[96m'materialize'\x1b[0m finished with status \x1b[92mSUCCESS\x1b[0m
12:00:05.100 - INFO - Executing task \x1b[96m'train-generator'\x1b[0m
    [sparring] 12:00:06 r1 train-generator: start
    Traceback (most recent call last):
      File "/x/phases.py", line 584, in train_generator
        frozen_rows = sample_frozen_solutions(cfg, frozen, ftok, problems, round_index)
    TypeError: 'tokenizers.Tokenizer' object is not callable

12:00:09 - ERROR - Task \x1b[96m'train-generator'\x1b[0m finished with status \x1b[91mFAILURE
12:00:09.100 - INFO - Executing task \x1b[96m'finalize'\x1b[0m
12:00:10.000 - INFO - Task \x1b[96m'finalize'\x1b[0m finished with status \x1b[92mSUCCESS\x1b[0m
"""


def test_failure_excerpt_finds_the_failed_task_and_its_error():
    task, error, trace = progress.failure_excerpt(RUN_LOG)
    assert task == "train-generator"
    assert error == "TypeError: 'tokenizers.Tokenizer' object is not callable"
    assert trace[0] == "Traceback (most recent call last):" and trace[-1] == error


def test_failure_excerpt_without_a_failed_task_or_traceback():
    assert progress.failure_excerpt("") == ("", "", [])
    no_trace = RUN_LOG.replace("Traceback (most recent call last):", "oops")
    assert progress.failure_excerpt(no_trace) == ("train-generator", "", [])


def test_countdown_estimates_the_time_left_from_the_pace_so_far(capsys, monkeypatch):
    clock = iter([100.0, 110.0, 130.0])  # start, after 1 of 4 units, after 3 of 4
    monkeypatch.setattr(progress.time, "perf_counter", lambda: next(clock))
    c = progress.Countdown(4, label="r2 evaluate")
    c.done("base: answers 1/4 problems", units=1)
    c.done("base: answers 3/4 problems", units=2)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("r2 evaluate base: answers 1/4 problems left~0m30s")  # 10 s/unit x 3
    assert lines[1].endswith("r2 evaluate base: answers 3/4 problems left~0m10s")  # 10 s/unit x 1


def test_a_silent_phase_says_it_is_still_working(monkeypatch, capsys):
    """`still_working` is due once nothing was said for the interval, names the phase, its time
    so far and the last line said in it; a line said resets it. The heartbeat thread says it."""
    monkeypatch.setattr(progress, "LABEL", "r3 evaluate")
    progress.say("r3 evaluate base: greedy answers 8/20 problems left~2m00s")
    said = progress._LAST["at"]
    assert progress.still_working(said + 49.0, said - 70.0) is None
    line = progress.still_working(said + 50.0, said - 70.0)
    assert line == (
        "r3 evaluate: still working, 2m00s in; last: base: greedy answers 8/20 problems left~2m00s"
    )
    # a phase starting after the last line counts from its own start and quotes nothing older
    assert progress.still_working(said + 60.0, said + 20.0) is None
    assert progress.still_working(said + 70.0, said + 20.0) == (
        "r3 evaluate: still working, 0m50s in"
    )
    progress.say("r3 evaluate base: HumanEval 1/4")  # said again: the interval starts over
    assert progress.still_working(progress._LAST["at"] + 49.0, said) is None
    said_lines: list[str] = []
    beat = threading.Event()

    def record(text: str) -> None:
        said_lines.append(text)
        if "still working" in text:
            beat.set()

    monkeypatch.setattr(progress, "say", record)
    with progress.heartbeat(interval=0.05):
        beat.wait(timeout=60)  # a guard against a hang, not a speed check
    assert said_lines and said_lines[0].startswith("r3 evaluate: still working, ")


def test_a_heartbeat_quotes_the_last_real_line_not_itself(monkeypatch, capsys):
    """Seen in a run: "still working, 2m30s in; last: still working, 1m40s in; last: ..."."""
    monkeypatch.setattr(progress, "LABEL", "r1 train-generator")
    with progress.heartbeat(interval=0.2):
        progress.say("r1 train-generator frozen answerer: sampling")
        deadline = time.monotonic() + 60  # a guard against a hang, not a speed check
        beats: list[str] = []
        while len(beats) < 2 and time.monotonic() < deadline:
            beats += [x for x in capsys.readouterr().out.splitlines() if "still working" in x]
            time.sleep(0.02)
    assert len(beats) >= 2
    for line in beats[:2]:
        assert line.endswith("; last: frozen answerer: sampling"), line
        assert line.count("still working") == 1, line
