"""`checkpoint` (remat): recompute a function's intermediates in the backward pass instead
of keeping them.

    layer = mt.checkpoint(layer)                                 # save nothing
    layer = mt.checkpoint(layer, policy=mt.checkpoint_policies.dots_saveable)

Under a transformation the function becomes a `checkpoint` equation carrying its jaxpr.
Its JVP is another checkpoint (of the JVP jaxpr). When linearize partially evaluates it,
`partial_eval_jaxpr` keeps as residuals only the block's inputs and what the policy
saves; the staged (tangent) equation recomputes everything else from them, and its
transpose runs that recomputation inside the backward pass.
"""

import functools

from mytorch.core import tree_util
from mytorch.core.jaxpr import eval_jaxpr
from mytorch.core.primitive import Primitive
from mytorch.core.trace import EvalTrace, aval_of, current_trace
from mytorch.lax._utils import asarray
from mytorch.transforms.call_rules import def_call_rules
from mytorch.transforms.closure import trace_closed_over

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]


# ---- checkpoint_name: an identity that labels a value for the policies below -------------
name_p = Primitive("name", kind="structural")


@name_p.def_abstract_eval
def _name_abstract_eval(x, *, name):
    return x


@name_p.def_impl
def _name_impl(x, *, name):
    return [x]


def _name_jvp(primals, tangents, *, name):
    (x,), (x_dot,) = primals, tangents
    return name_p.bind(x, name=name), x_dot  # the tangent is not the named value


def _name_transpose(ct, x, *, name):
    return [ct]


def _name_batching(axis, args, dims, *, name):
    (x,), (d,) = args, dims
    return name_p.bind(x, name=name), d


# compiled code gets a copy: an identity kernel would alias its operand's buffer, which the
# code generator may recycle while the name's result is still live
name_p.def_lowering("cpu", lambda x, *, name: x.copy())
name_p.def_jvp(_name_jvp)
name_p.def_transpose(_name_transpose)
name_p.def_batching(_name_batching)


def checkpoint_name(x, name):
    """`x` unchanged, labelled `name` for `checkpoint` policies (save_only_these_names...).

    Args:
      x: an array or a pytree of arrays.
      name: a hashable label, usually a str.

    Returns:
      `x` (same shapes and dtypes); each leaf is the output of one `name` equation.

    Example:
        >>> import mytorch as mt, mytorch.numpy as mnp
        >>> y = mt.ad_checkpoint.checkpoint_name(mnp.ones(2), "h")
        >>> y.tolist()
        [1.0, 1.0]
    """
    return tree_util.tree_map(lambda leaf: name_p.bind(asarray(leaf), name=name), x)


class checkpoint_policies:
    """Which intermediates a checkpointed block may keep: policy(prim, *avals, **params).

    Values a policy does not save are recomputed in the backward pass from the block's
    inputs and the saved values.
    """

    @staticmethod
    def nothing_saveable(prim, *avals, **params):
        return False

    @staticmethod
    def everything_saveable(prim, *avals, **params):
        return True

    @staticmethod
    def dots_saveable(prim, *avals, **params):
        return prim.name in ("dot_general", "conv_general_dilated")

    checkpoint_dots = dots_saveable

    @staticmethod
    def dots_with_no_batch_dims_saveable(prim, *avals, **params):
        if prim.name != "dot_general":
            return False
        (_, _), (lhs_batch, _) = params["dimension_numbers"]
        return not lhs_batch

    checkpoint_dots_with_no_batch_dims = dots_with_no_batch_dims_saveable

    @staticmethod
    def offload_dot_with_no_batch_dims(offload_src=None, offload_dst=None):
        """As dots_with_no_batch_dims_saveable: on host memory, offloaded means saved."""
        return checkpoint_policies.dots_with_no_batch_dims_saveable

    @staticmethod
    def save_only_these_names(*names):
        """Save exactly the values labelled by checkpoint_name with one of `names`."""
        names = frozenset(names)

        def policy(prim, *avals, **params):
            return prim is name_p and params["name"] in names

        return policy

    @staticmethod
    def save_any_names_but_these(*names):
        """Save every labelled value except those labelled with one of `names`."""
        names = frozenset(names)

        def policy(prim, *avals, **params):
            return prim is name_p and params["name"] not in names

        return policy

    @staticmethod
    def save_anything_except_these_names(*names):
        """Save everything except the values labelled with one of `names`."""
        names = frozenset(names)

        def policy(prim, *avals, **params):
            return not (prim is name_p and params["name"] in names)

        return policy

    @staticmethod
    def save_and_offload_only_these_names(*, names_which_can_be_saved,
                                          names_which_can_be_offloaded, offload_src=None,
                                          offload_dst=None):
        """As save_only_these_names: on host memory, an offloaded value is a saved one."""
        return checkpoint_policies.save_only_these_names(*names_which_can_be_saved,
                                                         *names_which_can_be_offloaded)

    @staticmethod
    def save_from_both_policies(policy_1, policy_2):
        """Save what either policy saves."""

        def policy(prim, *avals, **params):
            return policy_1(prim, *avals, **params) or policy_2(prim, *avals, **params)

        return policy


def checkpoint(fun, *, policy=None, prevent_cse=True, static_argnums=()):
    """`fun` whose intermediates are recomputed in reverse mode rather than stored.

    policy: which intermediates may be saved (default: none; see checkpoint_policies).
    static_argnums: positional arguments passed through as Python values.
    """
    policy = policy or checkpoint_policies.nothing_saveable
    static = {static_argnums} if isinstance(static_argnums, int) else set(static_argnums)

    @functools.wraps(fun)
    def remat_fun(*args, **kwargs):
        if type(current_trace()) is EvalTrace:
            return fun(*args, **kwargs)
        dyn = [a for i, a in enumerate(args) if i not in static]
        leaves, in_tree = tree_util.tree_flatten((dyn, kwargs))
        leaves = [asarray(x) for x in leaves]
        store = {}

        def flat(*xs):
            d, kw = tree_util.tree_unflatten(in_tree, xs)
            it = iter(d)
            full = [a if i in static else next(it) for i, a in enumerate(args)]
            out_leaves, store["out_tree"] = tree_util.tree_flatten(fun(*full, **kw))
            return [asarray(x) for x in out_leaves]

        name = getattr(fun, "__name__", "checkpoint")
        jaxpr, consts = trace_closed_over(flat, [aval_of(x) for x in leaves], name)
        outs = checkpoint_p.bind(*consts, *leaves, jaxpr=jaxpr, policy=policy,
                                 prevent_cse=prevent_cse)
        return tree_util.tree_unflatten(store["out_tree"], outs)

    return remat_fun


remat = checkpoint

checkpoint_p = Primitive("checkpoint", multiple_results=True, kind="call")
checkpoint_p.inline_param = "jaxpr"


@checkpoint_p.def_abstract_eval
def _checkpoint_abstract_eval(*avals, jaxpr, policy, prevent_cse):
    return jaxpr.out_avals


@checkpoint_p.def_impl
def _checkpoint_impl(*args, jaxpr, policy, prevent_cse):
    return eval_jaxpr(jaxpr, [], *args)


def _rebind(params, jaxpr, role, operands, results):
    """A checkpoint derived by a call rule keeps its policy and prevent_cse."""
    return dict(params, jaxpr=jaxpr)


# Each checkpoint is traced afresh, so caching its rules' results would only hold memory.
# Its transpose runs inline: the recomputation happens inside the enclosing backward pass.
def_call_rules(checkpoint_p, rebind=_rebind, saveable=lambda params: params["policy"],
               transpose="inline", cache=False)
