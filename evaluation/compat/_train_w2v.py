"""``reclist.utils.train_w2v`` of reclist 0.x (the version the 2022 challenge pinned): the
word2vec helper 2022 models trained item vectors with."""

from __future__ import annotations

from typing import Any


def train_embeddings(sessions: list, min_c: int = 3, size: int = 48, window: int = 5,
                     iterations: int = 15, ns_exponent: float = 0.75,
                     is_debug: bool = True) -> Any:
    """Item vectors from sessions with gensim's word2vec (CBOW), reclist 0.x's defaults.

    Parameters
    ----------
    sessions : list of lists
        The sequences (a user's or a session's items, in order); items are any hashable.
    min_c : int
        Items seen fewer times get no vector (gensim's ``min_count``).
    size : int
        Length of the vectors (``vector_size``).
    window : int
        Context window (``window``).
    iterations : int
        Passes over the sessions (``epochs``).
    ns_exponent : float
        Exponent of the negative-sampling distribution (``ns_exponent``).
    is_debug : bool
        Print how many items got a vector.

    Returns
    -------
    gensim.models.KeyedVectors
        The trained vectors (the model's ``wv``). gensim's other settings keep their
        defaults, as in reclist 0.x: its seed (1) and three worker threads, so two runs agree
        only with ``PYTHONHASHSEED`` fixed and the threads' scheduling aside.
    """
    from gensim.models import Word2Vec  # a requirement; loaded only when old code trains

    model = Word2Vec(sentences=sessions, min_count=min_c, vector_size=size, window=window,
                     epochs=iterations, ns_exponent=ns_exponent)
    if is_debug:
        print(f"# items in the space: {len(model.wv.index_to_key)}")
    return model.wv
