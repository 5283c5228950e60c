"""mt.nn.Embedding: a lookup table of vectors (Equinox's signature, normal(0, 1) init)."""

import numpy as np

from mytorch import random
from mytorch.core.source_info import user_error
from mytorch.core.trace import Tracer
from mytorch.nn._checks import as_array, positive_int, short
from mytorch.nn.module import Module, field
from mytorch.numpy import asarray, take

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of `weight` looked up by integer index.

    Args:
        num_embeddings: the number of rows (omit when `weight` is given).
        embedding_size: the length of each row (omit when `weight` is given).
        weight: an existing [num_embeddings, embedding_size] table to use instead.
        dtype: parameter dtype.
        key: a PRNG key (keyword-only; needed unless `weight` is given). Rows are drawn
            from a standard normal, as Equinox and PyTorch.

    Shapes: integer indices of any shape `(...) -> (..., embedding_size)`. A concrete index
    out of `[0, num_embeddings)` raises an IndexError; traced indices are clamped (as JAX's
    gathers).
    """

    weight: object
    num_embeddings: int = field(static=True)
    embedding_size: int = field(static=True)

    def __init__(self, num_embeddings=None, embedding_size=None, weight=None, dtype=None, *,
                 key=None):
        if weight is None:
            if num_embeddings is None or embedding_size is None:
                raise user_error(ValueError, "Embedding: give num_embeddings and "
                                 "embedding_size, or a weight")
            if key is None:
                raise user_error(TypeError, "Embedding: a PRNG key is required to initialise "
                                 "the table: pass key=mt.random.key(0)")
            n = positive_int("Embedding", "num_embeddings", num_embeddings)
            d = positive_int("Embedding", "embedding_size", embedding_size)
            weight = random.normal(key, (n, d), dtype)
        else:
            weight = as_array(weight) if dtype is None else asarray(weight, dtype=dtype)
            if weight.ndim != 2:
                raise user_error(ValueError, "Embedding: weight must be a 2-D table "
                                 f"[num_embeddings, embedding_size], got {short(weight)}")
            if (num_embeddings, embedding_size) not in ((None, None), weight.shape):
                raise user_error(ValueError, f"Embedding: weight {short(weight)} does not "
                                 f"match num_embeddings={num_embeddings}, "
                                 f"embedding_size={embedding_size}")
        self.weight = weight
        self.num_embeddings, self.embedding_size = (int(s) for s in weight.shape)

    def describe(self):
        return (f"Embedding(num_embeddings={self.num_embeddings}, "
                f"embedding_size={self.embedding_size})")

    def __call__(self, x, *, key=None):
        """`(...) int -> (..., embedding_size)`."""
        x = as_array(x)
        if not np.issubdtype(np.dtype(x.dtype), np.integer):
            raise user_error(TypeError, f"{self.describe()} expects integer indices, got "
                             f"{short(x)}")
        if not isinstance(x, Tracer) and x.size:
            idx = np.asarray(x)
            lo, hi = int(idx.min()), int(idx.max())
            if lo < 0 or hi >= self.num_embeddings:
                bad = lo if lo < 0 else hi
                raise user_error(IndexError, f"{self.describe()}: index {bad} is out of "
                                 f"range [0, {self.num_embeddings})")
        return take(self.weight, x, axis=0, mode="clip")
