"""The residual tape of a while loop differentiated in reverse mode where its trip count is
not known when the derivative is traced (under jit, or nested in cond/scan): how the NumPy
backend stores it.

The forward loop (`while_tape`) records each iteration's residual rows on a `Tape`, a
dynamically sized stack on the host; the tangent loop (a `scan` whose xs come from the
tape) and its transpose read the rows back, forwards or backwards. The generated loops
(control_flow_loops.py) keep the rows of one loop stacked: one array per row with a leading
step axis, doubled when full (`Tape.stacked`, read by stretches: `segments`); a vectorised
loop (and profiled code, through `runtime.run_while_tape`) pushes a list per step. With
checkpointing every k iterations the tape keeps only every k-th carry and replays the body
for one segment at a time when it is read, so memory is O(N/k + k) rows instead of O(N).

A tape's buffer is a NumPy array of dtype `object` (`TAPE_DTYPE`, the type `lax` gives it):
shape () for one loop, or the batch shape when the loop was vectorised (each element a
`TapeView` of one batched tape). So jit outputs, scan ys and cond residuals carry it like
any other buffer; `zeros` of a tape type (a branch that did not run the loop) reads as an
empty tape.
"""

import numpy as np

from mytorch.lax.while_tape import TAPE_DTYPE

__all__ = ["Tape", "TapeView", "box", "unbox", "boxed_views", "tape_steps", "tape_segments",
           "grow"]


def box(tape):
    """A 0-d object array holding `tape`: how buffers carry it."""
    out = np.empty((), TAPE_DTYPE)
    out[()] = tape
    return out


def unbox(value):
    """The tape (or view) inside a (possibly nested) 0-d object array; None for an empty
    one (a zero of tape type)."""
    while isinstance(value, np.ndarray):
        value = value[()] if value.ndim == 0 else value
        if isinstance(value, np.ndarray) and value.ndim:
            raise TypeError(f"a tape element was expected, got an array of {value.shape}")
    return value if isinstance(value, (Tape, TapeView)) else None


class Tape:
    """The residual rows of one run of a (possibly vectorised) loop.

    Each step pushes a list of NumPy arrays; for a loop of `batch_shape` elements the last
    entry of each step is that step's bool mask of the elements still running, and
    `counts` is how many steps each element ran. With `every` set, only the carry before
    every `every`-th step is kept and `replay(carry, n)` recomputes n steps' rows.
    """

    def __init__(self, batch_shape=(), every=None, replay=None):
        self.batch_shape = tuple(batch_shape)
        self.length = 0
        self.every, self.replay = every, replay
        self._rows, self._snapshots = [], []
        self._stacked = False  # rows kept as arrays with a leading step axis (`stacked`)
        self.counts = np.zeros(self.batch_shape, np.int64) if self.batch_shape else None

    @classmethod
    def stacked(cls, rows, length, every=None, snapshots=(), replay=None):
        """The tape of a (not vectorised) loop of `length` steps whose rows the loop wrote
        into arrays `rows` (step t's row j is rows[j][t]; the arrays may be longer). With
        `every`, `rows` is None and `replay(snapshot, n)` returns the n steps' rows from
        a kept carry in that stacked form."""
        tape = cls((), every, replay)
        tape.length, tape._stacked = length, True
        tape._rows, tape._snapshots = rows, list(snapshots)
        return tape

    def segments(self, reverse):
        """(rows, n) for each stretch of consecutive steps, stretches in order: each row an
        array whose leading axis holds the stretch's n steps (forwards: a backward reader
        walks each stretch from its end). A tape of lists gives one step per stretch."""
        if not self._stacked:
            for rows in self.steps(reverse):
                yield [np.asarray(r)[None] for r in rows], 1
        elif self.every is None:
            yield [r[:self.length] for r in self._rows], self.length
        else:
            k, segments = self.every, range(len(self._snapshots))
            for s in (reversed(segments) if reverse else segments):
                n = min(k, self.length - s * k)
                yield self.replay(self._snapshots[s], n), n

    def push(self, carry, rows, kept):
        """Record one step: its input `carry` and the `rows` it produced. `kept(values)`
        gives what to store for values (copies of those that may not stay valid)."""
        if self.every is None:
            self._rows.append(kept(rows))
        elif self.length % self.every == 0:
            self._snapshots.append(kept(carry))
        if self.batch_shape:
            self.counts += rows[-1]
        self.length += 1

    def steps(self, reverse):
        """Each step's rows (with the mask last, for a batched tape), in order."""
        if self._stacked:
            for rows, n in self.segments(reverse):
                for t in (range(n - 1, -1, -1) if reverse else range(n)):
                    yield [r[t] for r in rows]
            return
        if self.every is None:
            yield from (reversed(self._rows) if reverse else self._rows)
            return
        k, segments = self.every, range(len(self._snapshots))
        for s in (reversed(segments) if reverse else segments):
            rows = self.replay(self._snapshots[s], min(k, self.length - s * k))
            yield from (reversed(rows) if reverse else rows)


class TapeView:
    """Element `index` of a batched tape: its rows while it ran, without batch axes (an
    element runs steps 0..length-1: once finished, its carry and predicate stay put)."""

    def __init__(self, tape, index):
        self.tape, self.index = tape, index
        self.length = int(tape.counts[index])

    def steps(self, reverse):
        for i, rows in enumerate_steps(self.tape, reverse):
            if i < self.length:
                yield [r[self.index] for r in rows[:-1]]


def enumerate_steps(tape, reverse):
    """(step number, rows) of `tape`, in order."""
    numbers = range(tape.length - 1, -1, -1) if reverse else range(tape.length)
    return zip(numbers, tape.steps(reverse))


def boxed_views(tape):
    """The object array of `tape.batch_shape` whose elements view `tape`."""
    out = np.empty(tape.batch_shape, TAPE_DTYPE)
    for index in np.ndindex(*tape.batch_shape):
        out[index] = TapeView(tape, index)
    return out


def _element_rows(elements, reverse, n_rows):
    """Per-step rows gathered from independent element tapes: [*rows, mask] with the
    elements along a leading axis. An element that did not run a step repeats a row it
    (or, if it never ran, another element) really produced, so padding never feeds
    made-up values to the step."""
    lists = [list(e.steps(False)) if e is not None else [] for e in elements]
    total = max((len(rows) for rows in lists), default=0)
    for t in (range(total - 1, -1, -1) if reverse else range(total)):
        donor = next(rows[t] for rows in lists if len(rows) > t)
        picked = [rows[t] if t < len(rows) else rows[-1] if rows else donor for rows in lists]
        mask = np.array([t < len(rows) for rows in lists])
        yield [np.stack([np.asarray(p[j]) for p in picked]) for j in range(n_rows)] + [mask]


def tape_steps(tape_buf, batch_shape, reverse, n_rows):
    """The rows a tape-sourced scan reads at each step from its tape operand `tape_buf`.

    For batch_shape () a step is the list of rows; otherwise the rows carry the batch axes
    in front and the last entry is the bool mask of elements that ran that step."""
    if not batch_shape:
        tape = unbox(tape_buf)
        return iter(()) if tape is None else tape.steps(reverse)
    elements = [unbox(e) for e in np.asarray(tape_buf, TAPE_DTYPE).reshape(-1)]
    first = elements[0] if elements else None
    if (isinstance(first, TapeView) and first.tape.batch_shape == tuple(batch_shape)
            and all(isinstance(e, TapeView) and e.tape is first.tape and e.index == index
                    for e, index in zip(elements, np.ndindex(*batch_shape)))):
        return first.tape.steps(reverse)  # the views of one batched loop, in order

    def reshaped():
        for rows in _element_rows(elements, reverse, n_rows):
            yield [r.reshape(*batch_shape, *r.shape[1:]) for r in rows]

    return reshaped()


def tape_segments(tape_buf, reverse):
    """The stretches of steps (`Tape.segments`) a tape-sourced scan of batch shape () reads
    from its tape operand `tape_buf`; a view of a batched tape gives one step per
    stretch."""
    tape = unbox(tape_buf)
    if tape is None:
        return iter(())
    if isinstance(tape, Tape):
        return tape.segments(reverse)
    return (([np.asarray(r)[None] for r in rows], 1) for rows in tape.steps(reverse))


def grow(rows, n):
    """`rows` (an array with a leading step axis) in a new array of twice its length,
    its first n entries copied."""
    out = np.empty((2 * len(rows), *rows.shape[1:]), rows.dtype)
    out[:n] = rows[:n]
    return out
