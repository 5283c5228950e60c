"""Derivative, transpose and batching rules of the `fft` primitive (fft.py).

Every transform is linear (real-linear for RFFT and IRFFT, whose operand or result is
real), so its JVP applies the same transform to the tangent. Transposes pair values by
re(sum(a * b)), without conjugation (JAX's convention):

- FFT and IFFT: their matrices are symmetric (entries w^(j k)), so each is its own
  transpose.
- RFFT = slice(FFT(complex(x))) keeping the first m = L[-1] // 2 + 1 frequencies of the
  last axis. Transposing the three steps in reverse: the slice becomes zero-padding back
  to L[-1], FFT stays FFT, and the real-to-complex embedding becomes taking the real part:
  RFFTᵀ(ct) = real(FFT(pad(ct))).
- IRFFT: each output is x_t = (1/N) re(sum_k c_k y_k w^(k t)) over the half spectrum, with
  c_k = 2 for the frequencies whose mirror image was left out and 1 for the zero
  frequency (and the Nyquist one, L[-1] even), the imaginary parts of those two being
  ignored. Pairing with a real cotangent gives g_k = c_k / N * conj(RFFT(ct)_k); over
  several axes the complex inverse transforms of the leading ones fold into the same
  expression: IRFFTᵀ(ct) = conj(c * RFFT(ct)) / prod(L), c along the last axis.

The transformed dims are the trailing ones, so batching moves the mapped axis to the front.
"""

import math

import numpy as np

from mytorch.core.trace import aval_of
from mytorch.lax import elementwise as ew
from mytorch.lax import structural as st
from mytorch.lax._ad import Zero, deflinear
from mytorch.lax._batching import bdim_at_front
from mytorch.lax.fft import FftType, fft_p


def _rfft_transpose(ct, fft_lengths):
    """real(FFT(ct zero-padded to fft_lengths[-1] on the last axis))."""
    aval = aval_of(ct)
    n, m = fft_lengths[-1], aval.shape[-1]
    config = [(0, 0, 0)] * (aval.ndim - 1) + [(0, n - m, 0)]
    padded = st.pad(ct, st.full((), 0, aval.dtype), config)
    return ew.real(fft_p.bind(padded, fft_type=FftType.FFT, fft_lengths=fft_lengths))


def _irfft_transpose(ct, fft_lengths):
    """conj(c * RFFT(ct)) / prod(fft_lengths), c = (1, 2, ..., 2, [1 if L[-1] even])."""
    spectrum = fft_p.bind(ct, fft_type=FftType.RFFT, fft_lengths=fft_lengths)
    aval = aval_of(spectrum)
    n, m = fft_lengths[-1], aval.shape[-1]
    weights = np.full(m, 2.0)
    weights[0] = 1.0
    if n % 2 == 0:
        weights[-1] = 1.0  # the Nyquist frequency has no mirror image either
    weights = (weights / math.prod(fft_lengths)).astype(aval.dtype)
    scale = st.broadcast_in_dim(weights, aval.shape, (aval.ndim - 1,))
    return ew.conj(ew.mul(spectrum, scale))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
    if type(ct) is Zero:
        return [Zero(x.aval)]
    if fft_type == FftType.RFFT:
        out = _rfft_transpose(ct, fft_lengths)
    elif fft_type == FftType.IRFFT:
        out = _irfft_transpose(ct, fft_lengths)
    else:
        out = fft_p.bind(ct, fft_type=fft_type, fft_lengths=fft_lengths)
    return [out]


deflinear(fft_p, _fft_transpose)


@fft_p.def_batching
def _fft_batching(axis, args, dims, *, fft_type, fft_lengths):
    (x,), (d,) = args, dims
    return fft_p.bind(bdim_at_front(x, d, axis.size), fft_type=fft_type,
                      fft_lengths=fft_lengths), 0
