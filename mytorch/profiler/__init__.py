"""`mt.profiler`: where the time of a step goes, equation by equation.

    with mt.profiler.trace("step.json") as prof:   # prints a table; writes a Chrome trace
        params, state, loss = step(params, state, batch)
    prof.rows()                                     # the table's rows, as data
    prof.peak_bytes                                 # peak bytes of NumPy buffers counted

    mt.profiler.profile(step)(params, state, batch)  # the same around one call

While a region is profiled, `mt.config.profile` is on: jitted functions are compiled (once,
then cached) as separate executables whose generated code times every equation or fused
block (with its primitive, shapes and the user's source line), and eager ops are timed one
by one. Outside a profiled region the same functions run their usual executables, whose
code has no timing calls. See docs/profiler.md for a worked example and for what the peak
memory counts.
"""

import contextlib

from mytorch.core import profiling
from mytorch.core.config import config
from mytorch.core.trace import profile_eager
from mytorch.profiler.report import Profile, Row

__all__ = ["Profile", "Row", "profile", "trace"]


@contextlib.contextmanager
def trace(path=None, *, top_k=20, print_table=True):
    """Profile the code run inside the `with` block.

    Args:
      path: where to write a Chrome-trace / Perfetto JSON file of the events (open it in
        https://ui.perfetto.dev or chrome://tracing); None writes nothing.
      top_k: how many rows the printed table shows (the rows with the most self time).
      print_table: print the table when the block ends.

    Yields:
      a `Profile`, filled in when the block ends: `.table()`, `.rows()`, `.events`,
      `.wall_s`, `.peak_bytes`, `.write(path)`.

    Raises:
      RuntimeError: when a profiled region is already open (regions do not nest).

    Jitted functions called in the block for the first time with profiling on are traced
    and compiled again (their rows "trace jit(f)" and "compile f" show that time); call
    the step once before the block, or use `profile(f, warmup=1)`, to see a steady step.

    >>> import mytorch as mt
    >>> with mt.profiler.trace(print_table=False) as prof:
    ...     y = mt.jit(lambda x: x * 2 + 1)(mt.numpy.ones(3))
    >>> "mul" in {r.name for r in prof.rows()}
    True
    """
    result = Profile()
    session = profiling.start()
    was = config.profile
    try:
        config.update("profile", True)
        profile_eager(True)
        yield result
    finally:
        profile_eager(False)
        profiling.stop()
        config.update("profile", was)
        result._fill(session)
    if path is not None:
        result.write(path)
    if print_table:
        print(result.table(top_k))


def profile(fun, *, path=None, top_k=20, print_table=True, warmup=1, repeat=1):
    """`fun` wrapped so that each call is profiled (see `trace`).

    Args:
      fun: the function to profile (usually a jitted step).
      path: Chrome-trace JSON file to write (None: none).
      top_k: rows in the printed table.
      print_table: print the table after each call.
      warmup: calls of `fun` made first, with profiling code compiled but not recorded,
        so the recorded calls show a steady step without tracing or compile time. Use 0
        for a function that donates its arguments or has side effects.
      repeat: profiled calls (counts in the table add up over them); the last result is
        returned.

    Returns:
      a function taking `fun`'s arguments and returning its result; its `last` attribute
      holds the `Profile` of the latest call.

    >>> import mytorch as mt
    >>> f = mt.profiler.profile(mt.jit(lambda x: (x * x).sum()), print_table=False)
    >>> float(f(mt.numpy.ones(4)))
    4.0
    >>> f.last.rows()[0].calls >= 1
    True
    """
    if not callable(fun):
        raise TypeError(f"mt.profiler.profile: expected a callable, got {type(fun).__name__}")
    if not (isinstance(warmup, int) and warmup >= 0 and isinstance(repeat, int)
            and repeat >= 1):
        raise ValueError(f"mt.profiler.profile: warmup must be an int >= 0 and repeat an "
                         f"int >= 1, got warmup={warmup!r}, repeat={repeat!r}")
    from mytorch.api import block_until_ready

    def profiled(*args, **kwargs):
        if warmup:
            with config.override(profile=True):
                for _ in range(warmup):
                    block_until_ready(fun(*args, **kwargs))
        with trace(path, top_k=top_k, print_table=print_table) as prof:
            for _ in range(repeat):
                out = block_until_ready(fun(*args, **kwargs))
        profiled.last = prof
        return out

    profiled.last = None
    profiled.__name__ = f"profile({getattr(fun, '__name__', 'fun')})"
    profiled.__wrapped__ = fun
    return profiled
