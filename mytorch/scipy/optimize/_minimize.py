"""`minimize` and its BFGS method (Nocedal & Wright, Algorithm 6.1), as
`jax.scipy.optimize.minimize`: the inverse Hessian estimate starts at the identity and
takes a rank-two update after each strong Wolfe step."""

from typing import NamedTuple

import mytorch.numpy as mnp
from mytorch import lax
from mytorch.autodiff import value_and_grad
from mytorch.core.source_info import user_error
from mytorch.scipy.optimize._line_search import line_search

__all__ = ["OptimizeResults", "minimize"]


class OptimizeResults(NamedTuple):
    """The outcome of `minimize`.

    x: `(n,)` the final point; success: converged and no line search failed;
    status: 0 converged, 1 maxiter reached, 2 + the line search's status when it failed;
    fun, jac: value and gradient at x; hess_inv: `(n, n)` the inverse Hessian estimate;
    nfev, njev: function and gradient evaluations; nit: iterations.
    """

    x: object
    success: object
    status: object
    fun: object
    jac: object
    hess_inv: object
    nfev: object
    njev: object
    nit: object


class _BFGS(NamedTuple):
    converged: object
    failed: object
    k: object
    nfev: object
    ngev: object
    x_k: object
    f_k: object
    g_k: object
    h_k: object
    old_old_fval: object
    line_search_status: object


def _norm(g, ord):
    return mnp.linalg.norm(g, ord=ord)


def _bfgs(fun, x0, maxiter=None, norm=mnp.inf, gtol=1e-5, line_search_maxiter=10):
    """Runs BFGS from `x0` `(n,)` until `norm(grad) < gtol`, a line search fails, or
    `maxiter` iterations (default `200 n`); returns the final `_BFGS` state and status."""
    if maxiter is None:
        maxiter = x0.size * 200
    n = x0.shape[0]
    f_0, g_0 = value_and_grad(fun)(x0)
    state = _BFGS(
        converged=_norm(g_0, norm) < gtol, failed=mnp.asarray(False), k=mnp.asarray(0),
        nfev=mnp.asarray(1), ngev=mnp.asarray(1), x_k=x0, f_k=f_0, g_k=g_0,
        h_k=mnp.eye(n, dtype=x0.dtype),
        # SciPy's guess of the previous value, which sizes the first line search's step
        old_old_fval=f_0 + _norm(g_0, 2) / 2, line_search_status=mnp.asarray(0))

    def body(s):
        p_k = -(s.h_k @ s.g_k)
        ls = line_search(fun, s.x_k, p_k, old_fval=s.f_k, old_old_fval=s.old_old_fval,
                         gfk=s.g_k, maxiter=line_search_maxiter)
        s_k = ls.a_k.astype(p_k.dtype) * p_k
        x_next = s.x_k + s_k
        g_next = ls.g_k
        y_k = g_next - s.g_k
        rho = 1 / mnp.dot(y_k, s_k)
        w = mnp.eye(n, dtype=rho.dtype) - rho * s_k[:, None] * y_k[None, :]
        h_next = w @ s.h_k @ w.T + rho * s_k[:, None] * s_k[None, :]
        # a step with y.s == 0 gives no curvature information: keep the old estimate
        h_next = mnp.where(mnp.isfinite(rho), h_next, s.h_k)
        return _BFGS(
            converged=_norm(g_next, norm) < gtol, failed=ls.failed, k=s.k + 1,
            nfev=s.nfev + ls.nfev, ngev=s.ngev + ls.ngev, x_k=x_next, f_k=ls.f_k,
            g_k=g_next, h_k=h_next, old_old_fval=s.f_k, line_search_status=ls.status)

    state = lax.while_loop(lambda s: ~s.converged & ~s.failed & (s.k < maxiter), body, state)
    status = mnp.where(state.converged, 0, mnp.where(
        state.k == maxiter, 1, mnp.where(state.failed, 2 + state.line_search_status, -1)))
    return state, status


def minimize(fun, x0, args=(), *, method="BFGS", tol=None, options=None):
    """Minimizes the scalar `fun(x, *args)` over `x`, as `jax.scipy.optimize.minimize`.

    Args:
      fun: a differentiable function of an `(n,)` array (and `args`) to a scalar.
      x0: `(n,)` float starting point (a 1-D array, as in JAX).
      args: a tuple of extra arguments for `fun`.
      method: "BFGS" (any case), the one method.
      tol: the gradient-norm tolerance when `options` has no "gtol".
      options: `maxiter` (default `200 n`), `gtol` (default 1e-5), `norm` (the order of
        the gradient norm, default inf) and `line_search_maxiter` (default 10).

    Returns:
      `OptimizeResults(x, success, status, fun, jac, hess_inv, nfev, njev, nit)`.
    """
    if not isinstance(args, tuple):
        raise user_error(
            TypeError, f"minimize: args must be a tuple, got {type(args).__name__}")
    options = dict(options or {})
    if tol is not None:
        options.setdefault("gtol", tol)
    if method.lower() != "bfgs":
        raise user_error(ValueError, f"minimize: method {method!r} is not supported "
                                     "(only 'BFGS')")
    x0 = mnp.asarray(x0)
    if x0.ndim != 1:
        raise user_error(ValueError,
                         f"minimize: x0 must be 1-dimensional, got shape {x0.shape}")
    if not mnp.issubdtype(x0.dtype, mnp.floating):
        x0 = x0.astype(mnp.result_type(float))
    state, status = _bfgs(lambda x: fun(x, *args), x0, **options)
    return OptimizeResults(
        x=state.x_k, success=state.converged & ~state.failed, status=status, fun=state.f_k,
        jac=state.g_k, hess_inv=state.h_k, nfev=state.nfev, njev=state.ngev, nit=state.k)
