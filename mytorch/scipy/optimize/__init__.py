"""Minimization (`jax.scipy.optimize`'s counterpart): `minimize` with BFGS, and the strong
Wolfe line search it uses.

    from mytorch.scipy.optimize import minimize
    res = minimize(lambda x: mnp.sum((x - 3.0) ** 2), mnp.zeros(2), method="BFGS")
    res.x, res.fun, res.success

Both are `lax.while_loop`s over fixed-shape states, so they run under jit and vmap (a
vmapped minimize runs every problem until the last one converges, each frozen at its own
result once done).
"""

from mytorch.scipy.optimize._line_search import LineSearchResults, line_search
from mytorch.scipy.optimize._minimize import OptimizeResults, minimize

__all__ = ["LineSearchResults", "OptimizeResults", "line_search", "minimize"]
