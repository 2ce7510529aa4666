"""A batch of three submissions for ``reproduce --many`` (two with the uploaded code, one with
other model code) against a leaderboard that follows the organizer endpoints' contract, and the
checks of its outcome: shared by the batch's tests in this process and as Ray tasks."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from evaluation.challenge import LEADERBOARD_TESTS
from evaluation.cli import main
from tests.reproduce._fakes import fake_leaderboard, make_checkout, template_model_with

TOKEN = "organizer-" + "x" * 43
PRIVATE_SEED = 515_082_937  # nine digits, which a number of a report all but never holds by chance
#: This test's environment, as the prepared one every row uses.
ENV = Path(sys.executable).parents[1]


def batch_checkouts(root: Path) -> Path:
    """Three participants' folders in ``root`` beside a batch file: two with the uploaded code,
    one with other model code (not reproducible: its fingerprint differs)."""
    make_checkout(root / "teams" / "alpha")
    make_checkout(root / "teams" / "beta")
    make_checkout(root / "teams" / "gamma", template_model_with("self.other = 3  # changed"))
    (root / "admin.token").write_text(TOKEN + "\n")
    (root / "private.seed").write_text(f"{PRIVATE_SEED}\n")
    (root / "batch.csv").write_text("submission,checkout,private\n11,teams/alpha,\n"
                                    "12,teams/beta,yes\n13,teams/gamma,no\n")
    return root


def run_batch(root: Path, upload: dict, capsys, *options: str) -> tuple[int, dict, dict, str]:
    """Run ``reproduce --many`` over the three checkouts: status, report, board, output."""
    logs = root / f"logs-{len(list(root.glob('logs-*')))}"
    with fake_leaderboard(TOKEN) as (url, board):
        for submission in (11, 12, 13):
            board.payloads[submission] = upload
        status = main(["reproduce", "--many", str(root / "batch.csv"), "--server", url,
                       "--admin-token-file", str(root / "admin.token"), "--env", str(ENV),
                       "--private-seed-file", str(root / "private.seed"), "--timeout", "300",
                       "--log-dir", str(logs), *options])
    out, err = capsys.readouterr()
    report = json.loads((logs / "reproduce-many.json").read_text())
    return status, report, board.reports, out + err


def check_batch(root: Path, upload: dict, status: int, report: dict, sent: dict,
                output: str) -> None:
    """The batch's outcome: 11 and 12 reproduced (12 with its private folds), 13 not."""
    assert status == 1, output  # one not reproduced, none in error
    rows = {r["submission"]: r for r in report["rows"]}
    assert [r["submission"] for r in report["rows"]] == [11, 12, 13]  # the file's order
    assert report["counts"] == {"reproduced": 2, "not reproduced": 1, "error": 0}
    for sid in (11, 12):
        row = rows[sid]
        assert row["verdict"] == "reproduced" and row["fingerprint_ok"] is True, row
        assert row["differing"] == 0 and abs(row["worst_difference"]) <= 1e-9
        assert row["reasons"] == [] and row["seconds"] > 0
        assert Path(row["log"]).is_file() and "verdict: reproduced" in Path(row["log"]).read_text()
        assert sent[sid][0]["verdict"] == "reproduced" and len(sent[sid]) == 1
    assert rows[11]["private"] is False and "private_fold_tests" not in sent[11][0]
    # row 12 asked for the private folds: they are sent, the seed is not
    assert rows[12]["private"] is True and len(sent[12][0]["private_fold_tests"]) == 4
    assert str(PRIVATE_SEED) not in json.dumps(sent[12][0])
    gamma = rows[13]
    assert gamma["verdict"] == "not reproduced" and gamma["fingerprint_ok"] is False
    # stopped before evaluating: every (fold, test) value is missing, none compared
    assert gamma["differing"] == 4 * len(LEADERBOARD_TESTS)
    assert gamma["worst_difference"] is None
    assert any(r.startswith("the model code differs") for r in gamma["reasons"])
    assert sent[13][0]["verdict"] == "not reproduced"
    assert sent[13][0]["fingerprint_matches"] is False
    assert gamma["checkout"] == str((root / "teams" / "gamma").resolve())
    assert TOKEN not in output and str(PRIVATE_SEED) not in output
    assert "2 reproduced, 1 not reproduced, 0 error" in output
    # the printed table: paths relative to the current folder, the numbers of the report
    assert re.search(r"13 │ teams/gamma\s+│ not reproduced\s+│ no\s+│\s+36 │\s+— │", output)
    assert re.search(r"11 │ teams/alpha\s+│ reproduced\s+│ yes\s+│\s+0 │", output)
