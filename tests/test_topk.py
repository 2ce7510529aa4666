"""Top-k from embeddings: equal to a dense reference, exclusions, ties, padding, ids, errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from evaluation import topk_from_embeddings
from evaluation.errors import ConfigError

try:
    import torch
except ImportError:  # torch is optional
    torch = None

DEVICES = [
    "numpy",
    pytest.param(
        "cpu", marks=pytest.mark.skipif(torch is None, reason="torch is not installed (optional)")
    ),
]


def dense_reference(user_emb, item_emb, k, exclude=None):
    """Full score matrix, excluded items dropped, sorted by (-score, item index), -1 padded."""
    scores = np.asarray(user_emb, dtype=np.float64) @ np.asarray(item_emb, dtype=np.float64).T
    mask = np.zeros(scores.shape, dtype=bool) if exclude is None else exclude.toarray() != 0
    out = np.full((len(scores), k), -1)
    for u in range(len(scores)):
        items = [i for i in np.lexsort((np.arange(scores.shape[1]), -scores[u])) if not mask[u, i]]
        out[u, : min(k, len(items))] = items[:k]
    return out


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("seed", range(6))
def test_equals_dense_reference_with_exclusions_and_ties(device, seed):
    rng = np.random.default_rng(seed)
    n_users, n_items = int(rng.integers(1, 30)), int(rng.integers(1, 2500))
    k = int(rng.integers(1, 40))
    # small integer embeddings: many exactly tied scores, exactly representable
    user_emb = rng.integers(-2, 3, (n_users, 3)).astype(np.float32)
    item_emb = rng.integers(-2, 3, (n_items, 3)).astype(np.float32)
    exclude = sp.random(n_users, n_items, density=float(rng.uniform(0, 0.5)), random_state=seed,
                        format="csr")
    got = topk_from_embeddings(user_emb, item_emb, k, exclude=exclude, batch_size=7, device=device)
    assert (got.to_numpy() == dense_reference(user_emb, item_emb, k, exclude)).all()


@pytest.mark.parametrize("device", DEVICES)
def test_continuous_scores_large_catalog(device, rng):
    # wide enough for the sampled lower-bound path (the candidate pre-filter)
    user_emb = rng.standard_normal((20, 8))
    item_emb = rng.standard_normal((20_000, 8))
    exclude = sp.random(20, 20_000, density=0.01, random_state=1, format="csr")
    got = topk_from_embeddings(user_emb, item_emb, 50, exclude=exclude, device=device)
    assert (got.to_numpy() == dense_reference(user_emb, item_emb, 50, exclude)).all()


@pytest.mark.parametrize("device", DEVICES)
def test_all_scores_tied_pick_lowest_indices(device):
    got = topk_from_embeddings(np.zeros((2, 4)), np.zeros((5000, 4)), 3, device=device)
    assert got.to_numpy().tolist() == [[0, 1, 2], [0, 1, 2]]


@pytest.mark.parametrize("device", DEVICES)
def test_padding_when_fewer_than_k_items_remain(device):
    user_emb = np.array([[1.0], [1.0]])
    item_emb = np.array([[3.0], [1.0], [2.0]])
    exclude = sp.csr_array(np.array([[1, 0, 0], [1, 1, 1]]))
    got = topk_from_embeddings(user_emb, item_emb, 5, exclude=exclude, device=device)
    assert got.to_numpy().tolist() == [[2, 1, -1, -1, -1], [-1, -1, -1, -1, -1]]


@pytest.mark.parametrize("device", DEVICES)
def test_output_format_and_id_mapping(device):
    user_emb = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    item_emb = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], dtype=np.float32)
    got = topk_from_embeddings(user_emb, item_emb, 2, item_ids=[100, 200, 300],
                               user_ids=[42, 7], device=device)
    expected = pd.DataFrame([[100, 300], [200, 300]], index=pd.Index([42, 7], name="user_id"),
                            columns=["0", "1"])
    pd.testing.assert_frame_equal(got, expected)


def test_memory_budget_chooses_the_chunk_and_does_not_change_the_result(rng):
    user_emb = rng.standard_normal((50, 4))
    item_emb = rng.standard_normal((300, 4))
    small = topk_from_embeddings(user_emb, item_emb, 10, memory_budget=1)
    big = topk_from_embeddings(user_emb, item_emb, 10)
    pd.testing.assert_frame_equal(small, big)


@pytest.mark.skipif(torch is None, reason="torch is not installed (optional)")
def test_torch_tensors_are_accepted_and_match_numpy(rng):
    user_emb = rng.standard_normal((10, 5)).astype(np.float32)
    item_emb = rng.standard_normal((500, 5)).astype(np.float32)
    got = topk_from_embeddings(torch.from_numpy(user_emb), torch.from_numpy(item_emb), 7,
                               device="cpu")
    pd.testing.assert_frame_equal(got, topk_from_embeddings(user_emb, item_emb, 7))


@pytest.mark.skipif(torch is None or not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_numpy(rng):
    user_emb = rng.standard_normal((64, 16)).astype(np.float32)
    item_emb = rng.standard_normal((5000, 16)).astype(np.float32)
    exclude = sp.random(64, 5000, density=0.02, random_state=3, format="csr")
    got = topk_from_embeddings(user_emb, item_emb, 20, exclude=exclude, device="cuda")
    pd.testing.assert_frame_equal(got, topk_from_embeddings(user_emb, item_emb, 20,
                                                            exclude=exclude))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"k": 0}, "'k' parameter"),
        ({"user_emb": np.ones(3)}, "'user_emb' must be a 2-D"),
        ({"item_emb": np.ones((4, 3))}, "same dimension"),
        ({"item_emb": np.full((4, 2), np.nan)}, "'item_emb' must be finite"),
        ({"exclude": np.zeros((2, 4))}, "scipy.sparse"),
        ({"exclude": sp.csr_array((3, 4))}, "shape"),
        ({"item_ids": [1, 2, 3]}, "one id per embedding row"),
        ({"item_ids": [1, 1, 2, 3]}, "unique"),
        ({"item_ids": [-1, 1, 2, 3]}, "other than -1"),
        ({"batch_size": 0}, "'batch_size'"),
        ({"memory_budget": -5}, "'memory_budget'"),
        ({"device": 3}, "'device'"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"user_emb": np.ones((2, 2)), "item_emb": np.ones((4, 2)), "k": 2, **kwargs}
    with pytest.raises(ConfigError, match=match):
        topk_from_embeddings(args.pop("user_emb"), args.pop("item_emb"), args.pop("k"), **args)


def test_torch_device_without_torch_or_cuda_is_a_clear_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("no torch")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(ConfigError, match="needs PyTorch"):
        topk_from_embeddings(np.ones((2, 2)), np.ones((3, 2)), 1, device="cpu")


@pytest.mark.skipif(torch is None or torch.cuda.is_available(),
                    reason="needs torch installed and no CUDA device")
def test_unavailable_cuda_is_a_clear_error():
    with pytest.raises(ConfigError, match="not usable here"):
        topk_from_embeddings(np.ones((2, 2)), np.ones((3, 2)), 1, device="cuda")
