"""Plots and the Markdown run report (sparring.evaluation.report)."""

from __future__ import annotations

from pathlib import Path

from sparring.evaluation import report as reports

REPORT = {
    "baseline": {
        "model": "base",
        "round": 0,
        "humaneval_pass@1": 0.05,
        "bank_pass_rate": 0.2,
        "answerer_reward": 0.3,
        "base": True,
    },
    "snapshots": [
        {
            "model": "r1",
            "round": 1,
            "humaneval_pass@1": 0.08,
            "bank_pass_rate": 0.4,
            "answerer_reward": 0.4,
            "test_validity": 0.9,
            "hacking": {"reasons": []},
            "promotable": True,
        },
        {
            "model": "r2",
            "round": 2,
            "humaneval_pass@1": 0.1,
            "bank_pass_rate": None,
            "answerer_reward": 0.5,
            "test_validity": 0.1,
            "hacking": {"reasons": ["test validity 0.10 < min_validity 0.20"]},
            "promotable": False,
        },
    ],
    "rounds": [
        {"tests": 4, "test_validity": 0.1, "duplicate_rate": 0.25, "flat_group_share": None}
    ],
    "cross_play": [[0.5], [0.7], [None]],
    "cross_play_rows": ["base", "round 1", "round 2"],
    "cross_play_columns": ["round 1"],
    "elo": {"answerer": [1010.0, 1000.0, 990.0], "generator": [1000.0]},
    "selection": {"index": 0, "score": 0.48, "reason": "snapshot 0 (round 1) scores 0.48"},
}

PNG = b"\x89PNG\r\n\x1a\n"


def test_write_report_writes_pngs_and_markdown(tmp_path):
    written = reports.write_report(REPORT, tmp_path)
    names = {p.name for p in written}
    assert names == {"curves.png", "humaneval.png", "cross_play.png", "report.md"}
    for name in ("curves.png", "humaneval.png", "cross_play.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG)
    md = (tmp_path / "report.md").read_text()
    assert "![Cross-play" in md and "(cross_play.png)" in md
    assert "round 1 selected" in md  # labelled by round, not by list index
    assert "test validity 0.10 < min_validity 0.20" in md
    assert "| answerer | round 2 | 990 |" in md and "| base |" in md
    assert "n/a" in md  # a missing value is shown, not drawn as 0


def test_empty_report_still_renders(tmp_path):
    written = reports.write_report({"snapshots": []}, tmp_path)
    assert [p.name for p in written] == ["report.md"]
    assert (tmp_path / "report.md").read_text().startswith("# Sparring run report")


def test_log_to_mlflow(tmp_path, monkeypatch):
    """Logs every PNG and report.md into MLflow's active run: the real MLflow client, on a
    sqlite store and an artifact folder in tmp_path (no server: seconds)."""
    import mlflow
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)  # read by mlflow and sparring.tracking
    previous = mlflow.get_tracking_uri()  # an earlier test may have set the process-wide URI
    mlflow.set_tracking_uri(uri)
    try:
        out = tmp_path / "out"
        reports.write_report(REPORT, out)
        assert mlflow.active_run() is None
        assert reports.log_to_mlflow(out) == 0  # no active run: nothing logged
        client = MlflowClient(uri)
        experiment = client.create_experiment(
            "report", artifact_location=str(tmp_path / "artifacts")
        )
        with mlflow.start_run(experiment_id=experiment) as run:
            assert reports.log_to_mlflow(out) == 4
        listed = client.list_artifacts(run.info.run_id, "report")
        assert sorted(Path(a.path).name for a in listed) == [
            "cross_play.png", "curves.png", "humaneval.png", "report.md"
        ]  # fmt: skip
        assert {str(Path(a.path).parent) for a in listed} == {"report"}
        stored = Path(client.download_artifacts(run.info.run_id, "report/report.md", str(tmp_path)))
        assert stored.read_text() == (out / "report.md").read_text()
        assert [r.info.run_id for r in client.search_runs([experiment])] == [run.info.run_id]
    finally:
        mlflow.set_tracking_uri(previous)


def test_report_shows_the_learning_section_with_intervals():
    gain = {"n": 44, "before": 0.1, "after": 0.2, "delta": 0.1, "lo": 0.05, "hi": 0.15}
    md = reports.render_markdown({"learning": {"gains": {"base_to_final": {"strict": gain}}}}, {})
    assert "## Learning on held-out problems" in md
    assert "| base to final | strict | 44 | 0.100 | 0.200 | +0.100 | [+0.050, +0.150] |" in md


STEP_CURVES = [
    {
        "run": "r0-warm-start",
        "phase": "warm-start",
        "round": 0,
        "curves": {"loss": [[1, 1.2], [2, 0.9]], "grad_norm": [[1, 2.0], [2, 1.5]]},
    },
    {
        "run": "r1-train-answerer",
        "phase": "train-answerer",
        "round": 1,
        "curves": {
            "reward": [[1, 0.25], [2, 0.5]],
            "frac_reward_zero_std": [[1, 0.5], [2, 0.0]],
            "grad_norm": [[1, 0.2], [2, 0.4]],
        },
    },
]


def test_step_curves_are_plotted_and_tabulated_per_phase(tmp_path):
    written = reports.write_report({"snapshots": [], "step_curves": STEP_CURVES}, tmp_path)
    assert {p.name for p in written} == {"steps.png", "report.md"}
    assert (tmp_path / "steps.png").read_bytes().startswith(PNG)
    md = (tmp_path / "report.md").read_text()
    assert "(steps.png)" in md and "## Training steps" in md
    assert "| r1-train-answerer | 2 | 0.250 | 0.500 | 0.250 | 0.300 |" in md
    assert "| r0-warm-start | 2 | n/a | n/a | n/a | 1.750 |" in md  # SFT: no reward, no groups
