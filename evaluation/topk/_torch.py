"""The torch path: products and selection on a torch device (CPU or CUDA)."""

from __future__ import annotations

import math

import numpy as np

from evaluation.errors import ConfigError
from evaluation.topk._context import Context, assemble_rows, chunk_exclusions, overflow_error


def run_torch(ctx: Context, chunks, out: np.ndarray, torch) -> None:
    user = torch.from_numpy(ctx.user).to(torch.target)
    item_t = torch.from_numpy(ctx.item).to(torch.target).T.contiguous()
    for start, stop in chunks:
        rows, cols = chunk_exclusions(ctx.exclude, start, stop)
        with torch.no_grad():
            scores = user[start:stop] @ item_t
            if not ctx.bounded:
                finite = torch.isfinite(scores)
                if not bool(finite.all()):
                    raise overflow_error(finite.cpu().numpy(), start, ctx.user_ids, ctx.item_ids,
                                    scores.dtype)
            if len(rows):
                scores[torch.as_tensor(rows, device=scores.device),
                       torch.as_tensor(cols, device=scores.device)] = -math.inf
            r, c, v = _select_torch(scores, ctx.k, torch)
        assemble_rows(out[start:stop], r, c, v)


def torch_for(device: str):
    if device in ("numpy", "faiss"):
        return None
    if not isinstance(device, str):
        raise ConfigError(f"'device' must be 'numpy', 'faiss' or a torch device string; got "
                          f"{device!r}.")
    try:
        import torch
    except ImportError:
        raise ConfigError(
            f"device={device!r} needs PyTorch, which is not installed: pip install torch, or "
            "use device='numpy'."
        ) from None
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError) as error:
        raise ConfigError(f"Torch device {device!r} is not usable here: {error}") from None
    return _TorchOn(torch, device)


class _TorchOn:
    """The torch module bound to a device (keeps the selection code short)."""

    def __init__(self, torch, device: str):
        self.torch = torch
        self.target = torch.device(device)

    def __getattr__(self, name):
        return getattr(self.torch, name)


def _select_torch(scores, k: int, torch):
    """Torch counterpart of ``select_numpy``: ``torch.topk`` plus an index-ordered tie cut."""
    n_rows, n = scores.shape
    kk = min(k, n)
    if n_rows == 0 or n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0)
    # One more than k: a tie between the k-th and (k+1)-th value means topk's choice among the
    # values equal to the k-th is arbitrary; those rows get the exact index-ordered cut.
    wide = min(kk + 1, n)
    values, columns = torch.topk(scores, wide, dim=1, largest=True, sorted=True)
    kth = values[:, kk - 1 : kk]
    above = (values[:, :kk] > kth).sum(dim=1)
    ambiguous = kth[:, 0] > -math.inf
    ambiguous &= values[:, kk] == kth[:, 0] if wide > kk else torch.zeros_like(ambiguous)
    values, columns = values[:, :kk], columns[:, :kk]
    keep = (values > -math.inf) & ~ambiguous[:, None]
    rows = torch.arange(n_rows, device=scores.device)[:, None].expand(-1, kk)
    r, c, v = rows[keep], columns[keep], values[keep]
    if bool(ambiguous.any()):
        idx = torch.nonzero(ambiguous).flatten()
        block = scores[idx]
        kth_a = kth[idx]
        tie = block == kth_a
        tie &= torch.cumsum(tie.to(torch.int32), dim=1) <= (kk - above[idx])[:, None]
        local, ca = torch.nonzero((block > kth_a) | tie, as_tuple=True)
        r = torch.cat([r, idx[local]])
        c = torch.cat([c, ca])
        v = torch.cat([v, block[local, ca]])
    return (
        r.cpu().numpy().astype(np.int64),
        c.cpu().numpy().astype(np.int64),
        v.cpu().numpy().astype(np.float64),
    )
