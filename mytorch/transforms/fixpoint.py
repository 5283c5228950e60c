"""A bounded fixpoint over boolean masks.

Loop rules find, for instance, which carries of a loop have a nonzero tangent, are unknown
or are batched: a carry is if its input is, or if the body makes its output so. The mask
grows until the body preserves it; `fixpoint` runs that iteration once for every rule.
"""


def fixpoint(step, initial, limit=None, name="fixpoint"):
    """Iterate `step` from the mask `initial` until the mask stops changing.

    Args:
      step: mask -> (new mask, result); a monotone step (the new mask holds every flag of
        the old one), so the iteration ends within len(mask) + 1 steps.
      initial: a sequence of n bools.
      limit: the most steps run (default n + 1).
      name: what the error names.

    Returns:
      (mask, result): the stable mask (a list of n bools) and `step`'s result for it.

    Raises:
      RuntimeError: when the mask still changes after `limit` steps (a step that is not
        monotone).
    """
    mask = [bool(f) for f in initial]
    limit = len(mask) + 1 if limit is None else limit
    for _ in range(limit):
        new, result = step(mask)
        new = [bool(f) for f in new]
        if len(new) != len(mask):
            raise RuntimeError(f"{name}: the step turned a mask of {len(mask)} flags into "
                               f"one of {len(new)}")
        if new == mask:
            return mask, result
        mask = new
    raise RuntimeError(f"{name}: the mask did not stop changing within {limit} steps "
                       f"(last {mask}); the step is not monotone")
