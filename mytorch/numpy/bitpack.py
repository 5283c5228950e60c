"""packbits and unpackbits: bool/integer arrays to and from uint8 bit fields."""

import operator

from mytorch import lax
from mytorch.core import dtypes
from mytorch.core.source_info import user_error
from mytorch.numpy.creation import arange, asarray, zeros
from mytorch.numpy.joining import concatenate
from mytorch.numpy.shapes import moveaxis, ravel, reshape

__all__ = ["packbits", "unpackbits"]


def _bitorder(name, bitorder):
    if bitorder not in ("big", "little"):
        raise user_error(ValueError,
                         f"{name}: bitorder must be 'big' or 'little', got {bitorder!r}")
    shifts = arange(8, dtype=dtypes.uint8)
    return shifts[::-1] if bitorder == "big" else shifts


def packbits(a, axis=None, bitorder="big"):
    """Pack the nonzero-ness of the elements of a bool/integer array into uint8 bytes, 8
    elements a byte along `axis` (the flattened array for None), zero-padded at the end."""
    x = asarray(a)
    if not (dtypes.is_bool(x.dtype) or dtypes.is_int(x.dtype)):
        raise user_error(TypeError, f"packbits: expected an integer or bool array, got "
                        f"{x.aval.str_short()}")
    shifts = _bitorder("packbits", bitorder)
    if axis is None:
        x, axis = ravel(x), 0
    axis = operator.index(axis) % max(x.ndim, 1)
    x = moveaxis((x != 0).astype(dtypes.uint8), axis, -1)
    n = x.shape[-1]
    pad = -n % 8
    if pad:
        x = concatenate([x, zeros(x.shape[:-1] + (pad,), dtypes.uint8)], axis=-1)
    x = reshape(x, x.shape[:-1] + ((n + pad) // 8, 8))
    packed = lax.shift_left(x, lax.broadcast_in_dim(shifts, x.shape, (x.ndim - 1,)))
    return moveaxis(packed.sum(axis=-1, dtype=dtypes.uint8), -1, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """The bits of a uint8 array as a uint8 array of 0s and 1s, 8 per byte along `axis`
    (flattened for None); `count` keeps that many bits (negative: drops from the end)."""
    x = asarray(a)
    if x.dtype != dtypes.uint8:
        raise user_error(TypeError, f"unpackbits: expected a uint8 array, got {x.aval.str_short()}")
    shifts = _bitorder("unpackbits", bitorder)
    if axis is None:
        x, axis = ravel(x), 0
    axis = operator.index(axis) % max(x.ndim, 1)
    x = moveaxis(x, axis, -1)
    bits = lax.bitwise_and(
        lax.shift_right_logical(lax.broadcast_in_dim(x, x.shape + (8,), tuple(range(x.ndim))),
                                lax.broadcast_in_dim(shifts, x.shape + (8,), (x.ndim,))),
        lax.full_like(lax.broadcast_in_dim(x, x.shape + (8,), tuple(range(x.ndim))), 1))
    bits = reshape(bits, x.shape[:-1] + (x.shape[-1] * 8,))
    if count is not None:
        count = operator.index(count)
        n = bits.shape[-1]
        keep = n + count if count < 0 else count
        if keep < 0:
            raise user_error(ValueError,
                             f"unpackbits: count={count} drops more than the {n} bits there "
                             "are")
        if keep <= n:
            bits = bits[..., :keep]
        else:
            bits = concatenate([bits, zeros(bits.shape[:-1] + (keep - n,), dtypes.uint8)], -1)
    return moveaxis(bits, -1, axis)
