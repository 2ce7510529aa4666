"""Top-k items per user from embeddings: ``user_emb @ item_emb.T`` in memory-bounded chunks.

The score matrix of a full fold does not fit in memory (30k users x 820k items), so users are
scored a chunk at a time, training items are masked to ``-inf`` through the CSR indices of
``exclude``, and only ``k`` items per user are kept. Tie-breaking is deterministic in every path:
higher score first, then the lower item *index* (column of ``item_emb``).

Paths: the blocked NumPy kernel (default: each chunk's product split into item blocks that stay
in cache, most of a block discarded against each user's running k-th score), the reference NumPy
path it is checked against (``reference_topk``: the whole score matrix of a chunk, then one
selection pass), faiss (candidates from ``IndexFlatIP``, rescored and selected as the NumPy path
does) and torch. The first three return the same items in the same order, bit for bit.
"""

from evaluation.topk._api import DEFAULT_MEMORY_BUDGET, reference_topk, topk_from_embeddings

__all__ = ["DEFAULT_MEMORY_BUDGET", "reference_topk", "topk_from_embeddings"]
