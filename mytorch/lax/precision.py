"""`lax.Precision`: the precision setting of matrix products and convolutions.

The CPU backend computes in the operands' dtype whatever the setting (as XLA does on a
CPU); the value is recorded in the equation so that a backend with reduced-precision modes
(TF32 or bf16 passes on a GPU) can honour it.
"""

import enum

__all__ = ["Precision"]


class Precision(enum.Enum):
    """`DEFAULT` (fastest), `HIGH` or `HIGHEST` (full float32) precision.

    Also accepts JAX's string names: ``Precision('highest')``, ``'bfloat16'``
    (= DEFAULT), ``'tensorfloat32'`` (= HIGH), ``'float32'`` (= HIGHEST).
    """

    DEFAULT = 0
    HIGH = 1
    HIGHEST = 2

    @classmethod
    def _missing_(cls, value):
        if isinstance(value, str):
            member = _ALIASES.get(value.lower())
            if member is not None:
                return cls[member]
        names = ", ".join(sorted(_ALIASES))
        raise ValueError(f"Precision: unknown precision {value!r}; expected one of {names}")

    def __str__(self):
        return self.name


_ALIASES = {"default": "DEFAULT", "fastest": "DEFAULT", "bfloat16": "DEFAULT", "high": "HIGH",
            "tensorfloat32": "HIGH", "bfloat16_3x": "HIGH", "highest": "HIGHEST",
            "float32": "HIGHEST"}
