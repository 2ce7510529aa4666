"""Top-k from embeddings: equal to a dense reference, exclusions, ties, padding, ids, errors."""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from evaluation import topk_from_embeddings
from evaluation.errors import ConfigError
from evaluation.topk import _blocked as blocked_kernel  # its block size is patched below
from evaluation.topk import reference_topk

# torch is optional, and importing it costs ~2 s of CPU: a test process that runs none of the
# torch tests never imports it (the tests that need it take the `torch` fixture).
HAS_TORCH = importlib.util.find_spec("torch") is not None

try:
    import faiss
except ImportError:  # faiss-cpu is optional
    faiss = None

needs_faiss = pytest.mark.skipif(
    faiss is None, reason="faiss-cpu is not installed (optional: make faiss)"
)

DEVICES = [
    "numpy",
    pytest.param(
        "cpu", marks=pytest.mark.skipif(not HAS_TORCH, reason="torch is not installed (optional)")
    ),
]
# faiss scores in float32: it takes float32 embeddings only
FLOAT32_DEVICES = [*DEVICES, pytest.param("faiss", marks=needs_faiss)]


def dense_reference(user_emb, item_emb, k, exclude=None):
    """Full score matrix, excluded items dropped, sorted by (-score, item index), -1 padded."""
    scores = np.asarray(user_emb, dtype=np.float64) @ np.asarray(item_emb, dtype=np.float64).T
    mask = np.zeros(scores.shape, dtype=bool) if exclude is None else exclude.toarray() != 0
    out = np.full((len(scores), k), -1)
    for u in range(len(scores)):
        order = np.lexsort((np.arange(scores.shape[1]), -scores[u]))
        items = order[~mask[u, order]]
        out[u, : min(k, len(items))] = items[:k]
    return out


@functools.cache
def tied_case(seed: int):
    """Embeddings, k and exclusions of one seed, and their dense reference (computed once per
    seed for all the devices that are checked against it)."""
    rng = np.random.default_rng(seed)
    n_users, n_items = int(rng.integers(1, 30)), int(rng.integers(1, 2500))
    k = int(rng.integers(1, 40))
    # small integer embeddings: many exactly tied scores, exactly representable
    user_emb = rng.integers(-2, 3, (n_users, 3)).astype(np.float32)
    item_emb = rng.integers(-2, 3, (n_items, 3)).astype(np.float32)
    exclude = sp.random(n_users, n_items, density=float(rng.uniform(0, 0.5)), random_state=seed,
                        format="csr")
    return user_emb, item_emb, k, exclude, dense_reference(user_emb, item_emb, k, exclude)


@pytest.mark.parametrize("device", FLOAT32_DEVICES)
@pytest.mark.parametrize("seed", range(6))
def test_equals_dense_reference_with_exclusions_and_ties(device, seed):
    user_emb, item_emb, k, exclude, expected = tied_case(seed)
    got = topk_from_embeddings(user_emb, item_emb, k, exclude=exclude, batch_size=7, device=device)
    assert (got.to_numpy() == expected).all()


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


@pytest.mark.parametrize("device", FLOAT32_DEVICES)
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


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch", reason="torch is not installed (optional)")


def test_torch_tensors_are_accepted_and_match_numpy(rng, torch):
    user_emb = rng.standard_normal((10, 5)).astype(np.float32)
    item_emb = rng.standard_normal((500, 5)).astype(np.float32)
    got = topk_from_embeddings(torch.from_numpy(user_emb), torch.from_numpy(item_emb), 7,
                               device="cpu")
    pd.testing.assert_frame_equal(got, topk_from_embeddings(user_emb, item_emb, 7))


def test_cuda_matches_numpy(rng, torch):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
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


def test_unavailable_cuda_is_a_clear_error(torch):
    if torch.cuda.is_available():
        pytest.skip("needs torch installed and no CUDA device")
    with pytest.raises(ConfigError, match="not usable here"):
        topk_from_embeddings(np.ones((2, 2)), np.ones((3, 2)), 1, device="cuda")


def hard_case(seed: int, n_users: int, n_items: int, dim: int, ties: bool):
    """Embeddings (integer-valued when ``ties``: many exactly equal scores) and exclusions with
    every hard row: nothing excluded, all but a few items excluded (fewer than k remain), every
    item excluded, and heavy random exclusions."""
    rng = np.random.default_rng(seed)
    if ties:
        user_emb = rng.integers(-1, 2, (n_users, dim)).astype(np.float32)
        item_emb = rng.integers(-1, 2, (n_items, dim)).astype(np.float32)
    else:
        user_emb = rng.standard_normal((n_users, dim), dtype=np.float32)
        item_emb = rng.standard_normal((n_items, dim), dtype=np.float32)
    mask = rng.random((n_users, n_items)) < rng.uniform(0, 0.05, (n_users, 1))
    mask[0] = False
    mask[1] = True
    mask[2] = True
    mask[2, rng.choice(n_items, 5, replace=False)] = False  # k > items left after exclusion
    mask[3, : n_items // 2] = True  # the best items of many users excluded in bulk
    return user_emb, item_emb, sp.csr_array(mask.astype(np.float32))


@functools.cache
def blocked_case(ties: bool, batch_size: int | None):
    """The blocked kernel's hard case and its reference top-100, computed once for both block
    sizes (the block size is the kernel's, not the reference path's)."""
    user_emb, item_emb, exclude = hard_case(int(ties), 23, 60_000, 64, ties)
    expected = reference_topk(user_emb, item_emb, 100, exclude=exclude, batch_size=batch_size)
    return user_emb, item_emb, exclude, expected


@pytest.mark.parametrize("block_bytes", [None, 2**14])
@pytest.mark.parametrize("ties", [True, False])
@pytest.mark.parametrize("batch_size", [None, 7, 1])
def test_blocked_kernel_equals_the_reference_path_bit_for_bit(ties, batch_size, block_bytes,
                                                              monkeypatch):
    # 60k items x 64 dims: the kernel splits a chunk's product into item blocks (3 with 23
    # users a chunk; with small blocks 6 with 23 users and 2 with 7; one product for 1 or 2)
    user_emb, item_emb, exclude, expected = blocked_case(ties, batch_size)
    if block_bytes:
        monkeypatch.setattr(blocked_kernel, "_BLOCK_BYTES", block_bytes)
    got = topk_from_embeddings(user_emb, item_emb, 100, exclude=exclude, batch_size=batch_size)
    pd.testing.assert_frame_equal(got, expected)
    assert (expected.iloc[1] == -1).all() and (expected.iloc[2, 5:] == -1).all()
    assert (expected.iloc[2, :5] >= 0).all()


def test_blocked_kernel_with_ties_equals_the_dense_reference():
    # integer scores are exact in float32, so the float64 dense reference decides every tie
    user_emb, item_emb, exclude = hard_case(5, 9, 30_000, 64, ties=True)
    got = topk_from_embeddings(user_emb, item_emb, 30, exclude=exclude, batch_size=4)
    assert (got.to_numpy() == dense_reference(user_emb, item_emb, 30, exclude)).all()


@needs_faiss
@pytest.mark.parametrize("ties", [True, False])
@pytest.mark.parametrize("batch_size", [None, 7, 1])
def test_faiss_equals_the_reference_path_bit_for_bit(ties, batch_size):
    # ties at the cut send users back to faiss for a wider search; so do rows 1-3, whose
    # exclusions (up to the whole catalogue) are far more than the first over-fetch
    user_emb, item_emb, exclude = hard_case(10 + int(ties), 23, 20_000, 32, ties)
    kwargs = {"exclude": exclude, "batch_size": batch_size}
    pd.testing.assert_frame_equal(
        topk_from_embeddings(user_emb, item_emb, 100, device="faiss", **kwargs),
        reference_topk(user_emb, item_emb, 100, **kwargs),
    )


@needs_faiss
def test_faiss_refuses_float64():
    with pytest.raises(ConfigError, match="float32"):
        topk_from_embeddings(np.ones((2, 2)), np.ones((3, 2)), 1, device="faiss")


def test_faiss_not_installed_is_a_clear_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_faiss(name, *args, **kwargs):
        if name == "faiss":
            raise ImportError("no faiss")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_faiss)
    with pytest.raises(ConfigError, match=r"evalrs-harness\[faiss\]"):
        topk_from_embeddings(np.ones((2, 2), np.float32), np.ones((3, 2), np.float32), 1,
                             device="faiss")


def test_import_evaluation_does_not_import_faiss():
    import subprocess
    import sys

    code = "import sys, evaluation, evaluation.topk; print('faiss' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("device", FLOAT32_DEVICES)
def test_no_users_or_no_items(device):
    users, items = np.ones((2, 3), np.float32), np.ones((4, 3), np.float32)
    assert topk_from_embeddings(users[:0], items, 2, device=device).shape == (0, 2)
    got = topk_from_embeddings(users, items[:0], 2, device=device)
    assert got.to_numpy().tolist() == [[-1, -1], [-1, -1]]
