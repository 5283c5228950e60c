"""mt.nn: jax.nn's functions, Optax's losses, jax.nn.initializers, and Equinox-style modules.

    import mytorch as mt
    model = mt.nn.MLP(784, 10, width_size=128, depth=2, key=mt.random.key(0))
    logits = model(x)
"""

from mytorch.nn.activations import *  # noqa: F401,F403
from mytorch.nn.losses import *  # noqa: F401,F403
from mytorch.nn.attention import *  # noqa: F401,F403
from mytorch.nn import initializers  # noqa: F401
from mytorch.nn.module import *  # noqa: F401,F403
from mytorch.nn.linear import *  # noqa: F401,F403
from mytorch.nn.normalization import *  # noqa: F401,F403
from mytorch.nn.embedding import *  # noqa: F401,F403
from mytorch.nn.dropout import *  # noqa: F401,F403
from mytorch.nn.containers import *  # noqa: F401,F403
from mytorch.nn.conv import *  # noqa: F401,F403
from mytorch.nn.pooling import *  # noqa: F401,F403
from mytorch.nn.multihead import *  # noqa: F401,F403
from mytorch.nn.recurrent import *  # noqa: F401,F403
from mytorch.nn.moe import *  # noqa: F401,F403
