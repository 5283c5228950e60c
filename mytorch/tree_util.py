"""`mytorch.tree_util`: pytree utilities (the implementation lives in mytorch.core)."""

from mytorch.core.tree_util import *  # noqa: F401,F403
from mytorch.core.tree_util import __all__  # noqa: F401
