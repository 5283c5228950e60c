"""`Checkpointer`: the last k checkpoints of a training run in one folder, and resuming.

    ckpt = mt.Checkpointer("runs/mlp", max_to_keep=3)
    start = 0
    if ckpt.latest_step() is not None:
        state = ckpt.restore(like=state)       # params, optimiser state, step, key
        start = state["step"] + 1
    for step in range(start, 1000):
        ...
        ckpt.save(step, {"params": params, "opt_state": opt_state, "step": step, "key": key})
"""

import os
import re

from mytorch.core.source_info import user_error
from mytorch.serialization import fsync_dir, load, save

__all__ = ["Checkpointer"]

_NAME = re.compile(r"ckpt_(\d+)\.safetensors")
_TEMP = re.compile(r"\.ckpt_\d+\.safetensors\..*\.tmp")


class Checkpointer:
    """Keeps the newest `max_to_keep` checkpoints of a run in `directory` (as Orbax's
    CheckpointManager does), one file per step: ``<directory>/ckpt_<step>.safetensors``.

    Args:
        directory: the folder (created if missing).
        max_to_keep: how many checkpoints to keep (the highest steps); None keeps all.

    Each `save` is atomic (see `mt.save`): a crash mid-write leaves the earlier checkpoints
    intact, and its temporary file (``.ckpt_<step>.safetensors.<random>.tmp``) is never
    listed as a step. Temporary files left by a crashed run are removed when a Checkpointer
    is created on the folder.

    Example:
        >>> ckpt = mt.Checkpointer("/tmp/run", max_to_keep=2)
        >>> for step in range(3):
        ...     _ = ckpt.save(step, {"w": mnp.full((2,), step)})
        >>> ckpt.all_steps()
        [1, 2]
    """

    def __init__(self, directory, max_to_keep=3):
        if max_to_keep is not None and (type(max_to_keep) is not int or max_to_keep < 1):
            raise user_error(ValueError, "Checkpointer: max_to_keep must be a positive int or "
                             f"None, got {max_to_keep!r}")
        self.directory = os.fspath(directory)
        self.max_to_keep = max_to_keep
        os.makedirs(self.directory, exist_ok=True)
        for name in os.listdir(self.directory):
            if _TEMP.fullmatch(name):
                try:
                    os.unlink(os.path.join(self.directory, name))
                except OSError:
                    pass

    def path(self, step):
        """The file name of `step`'s checkpoint."""
        return os.path.join(self.directory, f"ckpt_{step}.safetensors")

    def all_steps(self):
        """The steps that have a checkpoint, ascending."""
        return sorted(int(m.group(1)) for m in map(_NAME.fullmatch, os.listdir(self.directory))
                      if m is not None)

    def latest_step(self):
        """The highest step with a checkpoint, or None when there is none."""
        steps = self.all_steps()
        return steps[-1] if steps else None

    def save(self, step, tree):
        """Write `tree` as the checkpoint of `step` (atomically; an existing checkpoint of
        the same step is replaced), then delete all but the newest `max_to_keep`.

        Args:
            step: a non-negative int (a concrete integer array is accepted).
            tree: the pytree to save (see `mt.save`).
        Returns:
            The path written.
        """
        step = self._step(step, "save")
        out = save(self.path(step), tree)
        if self.max_to_keep is not None:
            removed = False
            for old in self.all_steps()[:-self.max_to_keep]:
                try:
                    os.unlink(self.path(old))
                    removed = True
                except FileNotFoundError:
                    pass
            if removed:
                fsync_dir(self.directory)
        return out

    def restore(self, step=None, like=None):
        """Load the checkpoint of `step` (default: the latest), shaped like `like` if given
        (see `mt.load`).

        Raises:
            FileNotFoundError: no checkpoint of that step (or none at all) in the folder.
            CheckpointError: the file is corrupted or does not match `like`.
        """
        if step is None:
            step = self.latest_step()
            if step is None:
                raise user_error(FileNotFoundError,
                                 f"Checkpointer.restore: no checkpoint in {self.directory}")
        step = self._step(step, "restore")
        if not os.path.exists(self.path(step)):
            raise user_error(FileNotFoundError, f"Checkpointer.restore: no checkpoint of step "
                             f"{step} in {self.directory} (steps: {self.all_steps()})")
        return load(self.path(step), like=like)

    def _step(self, step, fname):
        try:
            value = int(step.__index__())
        except (AttributeError, TypeError):
            value = -1
        if value < 0 or isinstance(step, bool):
            raise user_error(TypeError, f"Checkpointer.{fname}: step must be a non-negative "
                             f"int, got {step!r}")
        return value

    def __repr__(self):
        return f"Checkpointer({self.directory!r}, max_to_keep={self.max_to_keep})"
