"""`mt.optim.tree`: the pytree functions of `mt.optim.tree_utils` under Optax's short names
(`optim.tree.norm(grads)`, `optim.tree.get(state, 'learning_rate')`, ...)."""

from mytorch.optim import tree_utils as _tu

add = _tu.tree_add
add_scale = _tu.tree_add_scale
bias_correction = _tu.tree_bias_correction
cast = _tu.tree_cast
cast_like = _tu.tree_cast_like
clip = _tu.tree_clip
div = _tu.tree_div
full_like = _tu.tree_full_like
get = _tu.tree_get
get_all_with_path = _tu.tree_get_all_with_path
max = _tu.tree_max
min = _tu.tree_min
mul = _tu.tree_mul
norm = _tu.tree_norm
ones_like = _tu.tree_ones_like
scale = _tu.tree_scale
set = _tu.tree_set
size = _tu.tree_size
sub = _tu.tree_sub
sum = _tu.tree_sum
update_infinity_moment = _tu.tree_update_infinity_moment
update_moment = _tu.tree_update_moment
update_moment_per_elem_norm = _tu.tree_update_moment_per_elem_norm
vdot = _tu.tree_vdot
where = _tu.tree_where
zeros_like = _tu.tree_zeros_like

__all__ = [
    "add", "add_scale", "bias_correction", "cast", "cast_like", "clip", "div", "full_like",
    "get", "get_all_with_path", "max", "min", "mul", "norm", "ones_like", "scale", "set",
    "size", "sub", "sum", "update_infinity_moment", "update_moment",
    "update_moment_per_elem_norm", "vdot", "where", "zeros_like",
]
