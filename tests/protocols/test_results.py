"""The protocols' typed results (one shape for all three), their old import paths, their
parameter checks, and a package without import cycles."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console

import evaluation.protocols as protocols
from evaluation.baselines import BiasModel
from evaluation.errors import ConfigError
from evaluation.protocols import (
    ReplayResult,
    SampledResult,
    SplitResult,
    evaluate_sampled,
    evaluate_split,
    replay,
)
from evaluation.splits import LeakageAudit, Split, global_time_split, temporal_user_split
from tests._script_runner import run_script
from tests.protocols._split_data import TEST, TRAIN, FixedModel, random_ratings

ROOT = Path(__file__).resolve().parents[2]
HAND_METRICS = ("precision@3", "recall@3", "hit_rate@3", "ndcg@3", "mrr@3")
# The keys of evaluate_split's dict, in the order results files have always had them.
SPLIT_KEYS = ["protocol", "model", "split", "k", "aggregate", "relevance_threshold", "graded",
              "n_users_evaluated", "n_relevant_events", "metrics", "rating_errors",
              "rating_aggregate", "sampled", "audit", "timing"]


def _hand_result(**kwargs) -> SplitResult:
    split = Split(TRAIN, TEST, params={"kind": "hand"})
    model = FixedModel({1: [13, 14, 12], 2: [12, 13, 14], 3: [11, 12, 13]})
    return evaluate_split(model, split, k=3, metrics=HAND_METRICS, **kwargs)


RATINGS = random_ratings(np.random.default_rng(5), n=900, n_users=20, n_items=200)


def _full_result() -> SplitResult:
    """A result with every optional part: rating errors, sampled metrics, audit."""
    return evaluate_split(BiasModel(top_k=3), temporal_user_split(RATINGS, 0.2), k=3,
                          metrics=("hit_rate@3", "ndcg@3"), sampled=5)


def _replay_result() -> ReplayResult:
    events = pd.concat([TRAIN, TEST], ignore_index=True)
    return replay(BiasModel, global_time_split(events, quantile=0.6), window=2, k=3,
                  metrics=("hit_rate@3", "ndcg@3"))


def _sampled_result() -> SampledResult:
    split = temporal_user_split(RATINGS, 0.2)
    return evaluate_sampled(BiasModel().train(split.train), split.test, split.train,
                            n_negatives=5)


# -- to_dict: the dict evaluate_split always returned ----------------------------------------

def test_split_result_to_dict_is_the_former_dict():
    result = _hand_result()
    out = result.to_dict()
    assert list(out) == [k for k in SPLIT_KEYS
                         if k not in ("rating_errors", "rating_aggregate", "sampled")]
    expected = {
        "protocol": "evaluate_split", "model": "FixedModel",
        "split": {"kind": "hand", "train_events": 5, "train_users": 3, "test_events": 4,
                  "test_users": 3},
        "k": 3, "aggregate": "user", "relevance_threshold": None, "graded": False,
        "n_users_evaluated": 3, "n_relevant_events": 4,
    }
    assert {k: out[k] for k in expected} == expected
    assert out["metrics"] == pytest.approx({"precision@3": (2 / 3) / 3, "recall@3": 1 / 3,
                                            "hit_rate@3": 1 / 3, "mrr@3": 1 / 3,
                                            "ndcg@3": out["metrics"]["ndcg@3"]})
    assert out["metrics"] == result.metrics  # the same floats, bit for bit
    assert out["audit"] == result.audit.to_dict() and out["audit"]["has_leakage"] is False
    assert list(out["timing"]) == ["train_s", "predict_s", "score_s"]
    assert json.loads(json.dumps(out)) == out


def test_split_result_to_dict_with_every_part():
    result = _full_result()
    out = result.to_dict()
    assert list(out) == SPLIT_KEYS
    assert out["rating_errors"] == result.rating_errors
    assert set(out["rating_errors"]) == {"rmse", "mae", "nrmse", "nmae"}
    assert out["rating_aggregate"] == "global"
    assert out["sampled"] == {**result.sampled.to_dict(), "scorer": "score_items"}
    assert list(out["timing"]) == ["train_s", "predict_s", "score_s", "sampled_s"]
    json.dumps(out)


def test_split_result_to_dict_turns_nonfinite_values_into_none():
    result = SplitResult(model="M", split={"kind": "x"}, k=1, aggregate="user",
                         relevance_threshold=np.float64(4.0), graded=False,
                         n_users_evaluated=0, n_relevant_events=0,
                         metrics={"ndcg@1": float("nan")})
    out = result.to_dict()
    assert out["metrics"] == {"ndcg@1": None}
    assert type(out["relevance_threshold"]) is float
    assert math.isnan(result.to_frame()["value"].iloc[0])


# -- a result compares by value ----------------------------------------------------------------

def test_split_result_is_not_a_mapping():
    result = _full_result()
    with pytest.raises(TypeError):
        result["metrics"]
    same = SplitResult(**{f.name: getattr(result, f.name) for f in dataclasses.fields(result)})
    assert result == same and result is not same
    assert result != dataclasses.replace(result, k=result.k + 1)
    assert result != result.to_dict()


# -- to_frame: values equal the dict's ----------------------------------------------------------

def _frame_matches(frame: pd.DataFrame, lookup) -> None:
    assert list(frame.columns) == ["group", "metric", "value"]
    assert frame["value"].dtype == np.float64 and len(frame)
    for group, metric, value in frame.itertuples(index=False):
        assert value == lookup(group, metric)


def test_to_frame_of_each_result_equals_its_dict():
    split = _full_result()
    out = split.to_dict()
    _frame_matches(split.to_frame(), lambda g, m: (out["sampled"]["metrics"] if g == "sampled"
                                                   else out[g])[m])
    assert set(split.to_frame()["group"]) == {"metrics", "rating_errors", "sampled"}
    rep = _replay_result()
    overall = rep.to_dict()["overall"]
    _frame_matches(rep.to_frame(), lambda g, m: overall[g][m])
    assert set(rep.to_frame()["group"]) == {"static", "replay", "delta"}
    sampled = _sampled_result()
    metrics = sampled.to_dict()["metrics"]
    _frame_matches(sampled.to_frame(), lambda g, m: metrics[m])
    assert len(sampled.to_frame()) == 3
    assert len(_hand_result(audit=False).to_frame()) == len(HAND_METRICS)


# -- rich rendering ------------------------------------------------------------------------------

@pytest.mark.parametrize("make,words", [
    (_full_result, ["BiasModel on a temporal_user split", "hit_rate@3", "rmse",
                    "sampled hit_rate@5 (N=5)", "Krichene", "Leakage audit"]),
    (_replay_result, ["Replay over", "static", "replay", "delta", "rmse", "Leakage audit"]),
    (_sampled_result, ["Sampled negatives (N=5", "hit_rate@10", "ndcg@10", "Krichene"]),
])
def test_rich_rendering(make, words):
    console = Console(record=True, width=140)
    console.print(make())
    text = console.export_text()
    for word in words:
        assert word in text


def test_split_result_without_audit_renders_a_table_alone():
    from rich.table import Table

    assert isinstance(_hand_result(audit=False).__rich__(), Table)


def test_verbose_prints_every_result(capsys):
    events = pd.concat([TRAIN, TEST], ignore_index=True)
    replay(BiasModel, global_time_split(events, quantile=0.6), window=2, k=3,
           metrics=("ndcg@3",), verbose=True)
    split = temporal_user_split(RATINGS, 0.2)
    evaluate_sampled(BiasModel().train(split.train), split.test, split.train, n_negatives=5,
                     verbose=True)
    out = capsys.readouterr().out
    assert "Replay over" in out and "Sampled negatives" in out and "Krichene" in out


# -- old import paths ------------------------------------------------------------------------------

@pytest.mark.parametrize("old", ["evaluation.protocol", "evaluation.sampled"])
def test_old_paths_are_gone(old):
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_public_names():
    assert protocols.__all__ == sorted(protocols.__all__)
    for name in protocols.__all__:
        assert getattr(protocols, name) is not None
    assert {"SplitResult", "ReplayResult", "SampledResult"} <= set(protocols.__all__)
    assert protocols.SplitResult.__module__ == "evaluation.protocols._holdout"
    assert isinstance(_hand_result().audit, LeakageAudit)


# -- parameter checks ------------------------------------------------------------------------

def test_parameter_checks_name_the_parameter_rule_and_value():
    split = Split(TRAIN, TEST)
    rule = r"must be an int in the range \[1, inf\)\. Got 0 instead\."
    with pytest.raises(ConfigError, match=r"The 'k' parameter of evaluate_split " + rule):
        evaluate_split(BiasModel(), split, k=0)
    with pytest.raises(ConfigError, match=r"The 'k' parameter of replay " + rule):
        replay(BiasModel, split, window=2, k=0)
    with pytest.raises(ConfigError, match=r"The 'window' parameter of replay " + rule):
        replay(BiasModel, split, window=0)
    with pytest.raises(ConfigError, match=r"The 'hit_ks' parameter of evaluate_sampled " + rule):
        evaluate_sampled(BiasModel().train(TRAIN), TEST, TRAIN, n_negatives=1, hit_ks=(0,))
    with pytest.raises(ConfigError, match=r"The 'seed' parameter of evaluate_sampled must be an "
                                          r"int in the range \[0, inf\)\. Got -1 instead\."):
        evaluate_sampled(BiasModel().train(TRAIN), TEST, TRAIN, n_negatives=1, seed=-1)
    with pytest.raises(ConfigError, match=r"The 'weighting' parameter of evaluate_sampled must "
                                          r"be one of \['uniform', 'popularity'\]\. Got 'pop'"):
        evaluate_sampled(BiasModel().train(TRAIN), TEST, TRAIN, weighting="pop")
    with pytest.raises(ConfigError, match=r"The 'mode' parameter of replay must be one of"):
        replay(BiasModel, split, window=2, mode="dynamic")
    # numpy integers are ints
    assert evaluate_split(BiasModel(), split, k=np.int64(3), audit=False).k == 3


# -- no import cycles, no function-level imports of the package's own modules -----------------

@pytest.mark.parametrize("module", ["_replay", "_holdout", "_sampled", "_ranking", "_ratings",
                                    "_render"])
def test_each_module_imports_alone_in_a_fresh_interpreter(module, tmp_path):
    # a process forked from one that imported only third-party libraries (no module of this
    # package): what the import of one module pulls in of the package is its own
    script = tmp_path / "probe.py"
    script.write_text(f"import evaluation.protocols.{module} as m; print(m.__name__)\n")
    done = run_script(script, [], cwd=ROOT, logs=tmp_path, timeout=120,
                      env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.exit_status == 0, done.stderr[-3000:]
    assert done.stdout.strip() == f"evaluation.protocols.{module}"


def _own_imports() -> dict[str, set[str]]:
    """The protocols modules each protocols module imports (module name -> names)."""
    graph = {}
    for path in (ROOT / "evaluation" / "protocols").glob("_*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module.startswith("evaluation.protocols."):
                    found.add(node.module.rsplit(".", 1)[1])
        graph[path.stem] = found
    return graph


def test_the_modules_import_each_other_without_a_cycle():
    graph = _own_imports()
    assert "_holdout" not in graph["_replay"]  # replay shares _ranking/_ratings, not the protocol
    assert not graph["_ranking"] & {"_holdout", "_replay", "_sampled"}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import cycle: {' -> '.join((*path, name))}"
        if name not in done:
            for other in graph.get(name, ()):
                visit(other, (*path, name))
            done.add(name)

    for name in graph:
        visit(name, ())


def test_no_function_level_imports_of_the_package():
    for path in (ROOT / "evaluation" / "protocols").glob("*.py"):
        tree = ast.parse(path.read_text())
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if isinstance(node, ast.ImportFrom):
                    assert not (node.module or "").startswith("evaluation"), (path, node.lineno)
                elif isinstance(node, ast.Import):
                    assert not any(a.name.startswith("evaluation") for a in node.names), path


def test_no_private_module_of_another_package_is_imported():
    for path in (ROOT / "evaluation" / "protocols").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("evaluation."):
                parts = node.module.split(".")
                private = [p for p in parts[2:] if p.startswith("_")]
                assert parts[1] in ("protocols", "_util") or not private, (path, node.module)
