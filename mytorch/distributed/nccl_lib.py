"""What the NCCL communicator (`mytorch.distributed.nccl`) asks of CuPy, and which NCCL
datatype and op reduce each dtype.

`CupyLib` is the communicator's one door to CuPy: the array module, `cupy.cuda.nccl`, the
current device and stream, events, byte copies and host copies. It imports CuPy when made
(`cupy_lib()`, at the first GPU communicator), so CPU users never import it; the tests
replace it by a fake on NumPy buffers (tests/distributed/fake_nccl.py).

`reduction(nccl, dtype, op, name)` maps a reduction to NCCL: int8, uint8, int32, uint32,
int64, uint64, float16, float32, float64 and bfloat16 natively; bool as bytes ("sum" and
"max" are "or", "min" is "and"); complex64/complex128 sums as float32/float64 pairs; a
TypeError naming the collective and the dtype otherwise (int16, uint16, complex max/min).
"""

import numpy as np

__all__ = ["CupyLib", "cupy_lib", "reduction", "OPS"]

OPS = ("sum", "max", "min")

# the NCCL datatype (an attribute of the nccl module) of each dtype NCCL reduces
_REDUCE_TYPES = {"int8": "NCCL_INT8", "uint8": "NCCL_UINT8", "int32": "NCCL_INT32",
                 "uint32": "NCCL_UINT32", "int64": "NCCL_INT64", "uint64": "NCCL_UINT64",
                 "float16": "NCCL_FLOAT16", "float32": "NCCL_FLOAT32",
                 "float64": "NCCL_FLOAT64", "bfloat16": "NCCL_BFLOAT16"}
# complex sums reduce as pairs of their real type
_COMPLEX_PARTS = {"complex64": "NCCL_FLOAT32", "complex128": "NCCL_FLOAT64"}
# a bool buffer reduces as bytes: sum and max are "or", min is "and"
_BOOL_OPS = {"sum": "NCCL_MAX", "max": "NCCL_MAX", "min": "NCCL_MIN"}
_INSTALL = ("pip install 'mytorch[gpu]' (cupy-cuda13x, and nvidia-nccl-cu13 from which "
            "CuPy loads NCCL)")


class CupyLib:
    """The CuPy calls of the communicator: the array module, the nccl module, the current
    device and stream, events, and host/device copies. `available()` is False (with
    `reason`) where CuPy or NCCL cannot be loaded."""

    def __init__(self):
        try:
            import cupy
            from cupy.cuda import nccl
        except ImportError as e:
            raise ImportError(f"mytorch's NCCL communicator (pmap over GPUs) needs CuPy: "
                              f"{_INSTALL}; importing it failed: {e}") from None
        if not getattr(nccl, "available", False) or not hasattr(nccl, "NcclCommunicator"):
            raise ImportError(f"mytorch's NCCL communicator (pmap over GPUs) needs NCCL, "
                              f"which CuPy could not load: {_INSTALL}")
        self.xp, self.nccl, self._cuda = cupy, nccl, cupy.cuda

    def current_device(self):
        """The ordinal of CuPy's current GPU."""
        return self._cuda.Device().id

    def on_device(self, device_id):
        """A context making GPU `device_id` current (allocations and streams there)."""
        return self._cuda.Device(device_id)

    def stream_ptr(self):
        """The handle of the current stream of the current device (CUDA's cudaStream_t)."""
        return self._cuda.get_current_stream().ptr

    def record_event(self):
        """An event recorded now on the current stream; `.done` once the work before it
        has completed."""
        event = self._cuda.Event(block=False, disable_timing=True)
        event.record()
        return event

    def ptr(self, a):
        """The device address of array `a`'s first element."""
        return a.data.ptr

    def device_of(self, a):
        """The ordinal of the GPU holding `a`, or None for a host array."""
        device = getattr(a, "device", None)
        return getattr(device, "id", None)

    def copy_bytes(self, dst, dst_at, src, src_at, nbytes):
        """Copy `nbytes` from byte `src_at` of C-contiguous device array `src` to byte
        `dst_at` of `dst`, on the current stream (any dtype: no kernel)."""
        (dst.data + dst_at).copy_from_device_async(src.data + src_at, nbytes)

    def to_host(self, a):
        """A NumPy copy of device array `a`."""
        return self.xp.asnumpy(a)


_LIB = []


def cupy_lib():
    """The process's `CupyLib` (made, and CuPy imported, at first use)."""
    if not _LIB:
        _LIB.append(CupyLib())
    return _LIB[0]


def reduction(nccl, dtype, op, name):
    """(NCCL datatype, NCCL op, NCCL elements per array element) of the reduction `op`
    ("sum", "max", "min") of `dtype` in collective `name`, as codes of module `nccl`.

    Raises:
        ValueError: an unknown op. TypeError: a dtype NCCL cannot reduce with `op`.
    """
    if op not in OPS:
        raise ValueError(f"NcclCommunicator.{name}: op must be one of {list(OPS)}, got "
                         f"{op!r}")
    key = np.dtype(dtype).name
    if key == "bool":
        return nccl.NCCL_UINT8, getattr(nccl, _BOOL_OPS[op]), 1
    op_code = getattr(nccl, f"NCCL_{op.upper()}")
    if key in _COMPLEX_PARTS and op == "sum":
        return getattr(nccl, _COMPLEX_PARTS[key]), op_code, 2
    code = getattr(nccl, _REDUCE_TYPES.get(key, "-"), None)
    if code is None:
        why = ("a complex value has no order" if key in _COMPLEX_PARTS
               else "NCCL has no such type")
        raise TypeError(f"NcclCommunicator.{name}({op}): NCCL cannot reduce {key} ({why}); "
                        f"it reduces bool, int8, uint8, (u)int32, (u)int64, float16, "
                        f"bfloat16, float32, float64 (and complex sums): cast the operand "
                        f"first")
    return code, op_code, 1
