"""Imports every module of GPU eager kernels, so that each registers its kernels in
`kernels.KERNELS` (the backend imports this module).

One module per family: structural (and zeros/add_any/name), reductions, dot, convolution,
indexing, sorting, fft, prng, linalg, attention; kernels_common holds what they share.
Elementwise primitives with a CUDA expression have no eager kernel here (they run as
generated kernels), nor do call primitives (the compiler runs them as host loops over
compiled bodies) or collectives (no eager kernel on the CPU either: they exist only inside
pmap's compiled code).
"""

from mytorch.backends.cupy import (  # noqa: F401
    kernels_attention,
    kernels_convolution,
    kernels_dot,
    kernels_fft,
    kernels_indexing,
    kernels_linalg,
    kernels_prng,
    kernels_reductions,
    kernels_sorting,
    kernels_structural,
)
