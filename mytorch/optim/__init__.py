"""mt.optim: Optax's GradientTransformations by Optax's names and signatures.

An optimiser is a pair of pure functions, `init(params) -> state` and
`update(grads, state, params=None) -> (updates, state)`, over arbitrary pytrees;
`apply_updates(params, updates)` takes the step. See docs/optim.md.
"""

from mytorch.optim import tree, tree_utils
from mytorch.optim.aliases import *
from mytorch.optim.aliases import __all__ as _aliases_all
from mytorch.optim.base import *
from mytorch.optim.base import __all__ as _base_all
from mytorch.optim.clipping import *
from mytorch.optim.clipping import __all__ as _clipping_all
from mytorch.optim.extras import *
from mytorch.optim.extras import __all__ as _extras_all
from mytorch.optim.factorized import *
from mytorch.optim.factorized import __all__ as _factorized_all
from mytorch.optim.schedules import *
from mytorch.optim.schedules import __all__ as _schedules_all
from mytorch.optim.transforms import *
from mytorch.optim.transforms import __all__ as _transforms_all
from mytorch.optim.variants import *
from mytorch.optim.variants import __all__ as _variants_all
from mytorch.optim.wrappers import *
from mytorch.optim.wrappers import __all__ as _wrappers_all

__all__ = (["tree", "tree_utils"] + _base_all + _transforms_all + _variants_all  # noqa: PLE0605
           + _clipping_all + _wrappers_all + _schedules_all + _aliases_all + _factorized_all
           + _extras_all)
