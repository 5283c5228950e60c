"""Keep freed NumPy buffers in the process heap (glibc), so allocating them again is cheap.

glibc serves allocations above its mmap threshold (128 KiB, raised dynamically up to the
size of freed blocks) with fresh mappings, and trims freed heap memory back to the system:
the next allocation of that size page-faults on every 4 KiB page. Compiled training steps
allocate many same-sized buffers while others are alive (gradients, optimiser state); with
twenty 256 KiB arrays alive, each new one cost 117 us instead of 14 us. Raising both
thresholds keeps such memory in the heap for reuse.

On by default on Linux with glibc; `MYTORCH_TUNE_MALLOC=0` (or
`mt.config.update("tune_malloc", False)`) restores glibc's defaults. Elsewhere a no-op.
"""

import ctypes
import ctypes.util
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_TUNED = {_M_MMAP_THRESHOLD: 32 << 20, _M_TRIM_THRESHOLD: 256 << 20}
_DEFAULT = {_M_MMAP_THRESHOLD: 128 << 10, _M_TRIM_THRESHOLD: 128 << 10}


def _mallopt():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return None


def tune(on):
    """Apply (or undo) the heap settings; returns whether glibc accepted them."""
    mallopt = _mallopt()
    if mallopt is None:
        return False
    values = _TUNED if on else _DEFAULT
    return all(mallopt(k, v) == 1 for k, v in values.items())
