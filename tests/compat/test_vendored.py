"""A participant's copy of the official 2022/2023 ``evaluation/`` folder is recognised and
named, with what to do, instead of failing deep inside it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from evaluation.compat import vendored_evaluation

ROOT = Path(__file__).resolve().parents[2]

# Lines of the official files that identify them (the harness's own text, not theirs).
RUNNER_2022 = ("class ChallengeDataset:\n"
               "    def _generate_folds(self, num_folds, seed):\n        pass\n")
RECLIST_2022 = "from reclist.abstractions import RecList, RecDataset, rec_test\n" \
               "class EvalRSDataset(RecDataset):\n    pass\n"
RECLIST_2023 = "class EvalRSReclist:\n    pass\nclass EvalRSSimpleModel:\n    pass\n"


def write(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)


def test_the_harness_itself_is_not_a_copy():
    assert vendored_evaluation(ROOT) is None


def test_a_2022_folder_in_a_participants_checkout(tmp_path):
    write(tmp_path / "evaluation", {"__init__.py": "", "EvalRSRunner.py": RUNNER_2022,
                                    "EvalRSRecList.py": RECLIST_2022})
    text = vendored_evaluation(tmp_path)
    assert text is not None
    assert "official EvalRS 2022 evaluation/ folder" in text
    assert "evaluation/EvalRSRunner.py" in text and "evaluation/EvalRSRecList.py" in text
    assert "delete or rename that folder" in text
    assert "--reclist myreclist:MyRecList" in text  # their custom tests live in that file


def test_custom_tests_edited_into_the_copy_are_found_and_offered(tmp_path):
    edited = RECLIST_2022 + (
        "class EvalRSRecList(RecList):\n"
        "    @rec_test('HIT_RATE')\n    def hit_rate_at_100(self):\n        pass\n"
        "    @rec_test(test_type='MY_SLICE')\n    def my_slice(self):\n        pass\n"
        "class myRecList(EvalRSRecList):\n"
        "    @rec_test(test_type='custom_test')\n    def lucky(self):\n        pass\n")
    write(tmp_path / "evaluation", {"EvalRSRunner.py": RUNNER_2022, "EvalRSRecList.py": edited})
    text = vendored_evaluation(tmp_path)
    assert "custom tests: evaluation/EvalRSRecList.py: EvalRSRecList (MY_SLICE), myRecList " \
           "(custom_test)" in text
    assert "HIT_RATE" not in text.split("custom tests:")[1]


def test_a_2023_folder(tmp_path):
    write(tmp_path / "evaluation", {"EvalRSReclist.py": RECLIST_2023})
    assert "official EvalRS 2023" in vendored_evaluation(tmp_path)


def test_official_files_copied_over_the_harness(tmp_path):
    write(tmp_path / "evaluation", {"__init__.py": "", "_version.py": "", "EvalRSRunner.py":
                                    RUNNER_2022})
    (tmp_path / "evaluation" / "runner").mkdir()
    text = vendored_evaluation(tmp_path)
    assert "replaced this harness's own" in text and "git checkout -- evaluation/" in text


def test_submission_py_names_the_copy_instead_of_a_traceback(tmp_path):
    shutil.copy(ROOT / "submission.py", tmp_path / "submission.py")
    shutil.copytree(ROOT / "evaluation", tmp_path / "evaluation",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # the 2022 folder copied over the harness: its empty __init__.py and its runner
    write(tmp_path / "evaluation", {"__init__.py": "", "EvalRSRunner.py": RUNNER_2022})
    done = subprocess.run([sys.executable, "submission.py", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "error:" in done.stderr and "replaced this harness's own" in done.stderr
    assert "Traceback" not in done.stderr
