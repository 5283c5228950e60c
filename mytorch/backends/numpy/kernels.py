"""Imports every module of NumPy kernels, so that each registers its kernels."""

from mytorch.backends.numpy import (  # noqa: F401
    attention,
    collectives,
    control_flow_cond,
    control_flow_scan,
    control_flow_tape,
    control_flow_while,
    convolution,
    dot,
    dot_update,
    elementwise,
    fft,
    indexing,
    linalg,
    linalg_eig,
    prng,
    reductions,
    sorting,
    structural,
)
