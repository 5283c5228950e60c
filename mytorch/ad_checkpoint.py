"""`mytorch.ad_checkpoint`: rematerialisation and the names its policies read.

    from mytorch.ad_checkpoint import checkpoint, checkpoint_name, checkpoint_policies
    h = checkpoint_name(h @ w, "proj")
    block = checkpoint(block, policy=checkpoint_policies.save_only_these_names("proj"))
"""

from mytorch.checkpoint import checkpoint, checkpoint_name, checkpoint_policies, remat

__all__ = ["checkpoint", "checkpoint_name", "checkpoint_policies", "remat"]
