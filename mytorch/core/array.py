"""The immutable array types: `Array` (the public base class) and `ArrayImpl` (a buffer).

`Array` is the type users see (`isinstance(x, mt.Array)` holds for concrete arrays and for
traced values alike). Its arithmetic operators, `__getitem__`, `.at[...]` and methods such
as `.sum()` bind primitives, which live above core; `mytorch.numpy` installs them at import
(see `install_methods`), so core never imports upward.
"""

import numpy as np

from mytorch.core import dtypes
from mytorch.core.aval import ShapedArray
from mytorch.core.backend import default_device


class Array:
    """An immutable n-dimensional array, concrete or traced.

    Attributes: `shape` (tuple of ints), `dtype` (numpy dtype), `ndim`, `size`, `aval`.
    Functional updates go through `x.at[idx].set(v)`, never `x[idx] = v`.
    """

    __slots__ = ()
    __array_priority__ = 100

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def weak_type(self):
        return self.aval.weak_type

    def __len__(self):
        if not self.shape:
            raise TypeError(f"len() of a 0-d array ({self.aval.str_short()})")
        return self.shape[0]

    def __setitem__(self, idx, value):
        raise TypeError(
            "mytorch arrays are immutable: `x[idx] = v` is not supported. "
            "Use `x = x.at[idx].set(v)` (or .add/.mul/.min/.max) for a functional update."
        )

    def __hash__(self):
        raise TypeError(
            f"unhashable type: mytorch Array ({self.aval.str_short()}); "
            "use a tuple or a Python scalar as a dict key or static argument"
        )

    def __iter__(self):
        if not self.shape:
            raise TypeError(f"iteration over a 0-d array ({self.aval.str_short()})")
        return (self[i] for i in range(self.shape[0]))


def install_methods(methods):
    """Install operator and method implementations on `Array` (called by mytorch.numpy)."""
    for name, fn in methods.items():
        setattr(Array, name, fn)


class DonatedBuffer:
    """Stands in for the buffer of an array donated to a compiled function (jit's or
    pmap's donate_argnums): any use of it raises, naming `owner` (e.g. "jit(step)")."""

    __slots__ = ("owner",)

    def __init__(self, owner):
        self.owner = owner

    def __getattr__(self, attr):
        raise RuntimeError(
            f"this array was donated to {self.owner} (donate_argnums) and its buffer may "
            "have been overwritten: use the function's result instead")


class ArrayImpl(Array):
    """A concrete array: a backend buffer on one device, plus its weak-type flag.

    `committed` (as JAX's): the array was placed on its device on purpose (`device_put`
    to a device, or computed from committed operands). An uncommitted array (made from a
    Python or NumPy value on the default device) follows committed operands of an
    operation to their device; committed operands on two devices are an error."""

    __slots__ = ("_buf", "_weak", "_device", "_committed")

    def __init__(self, buf, weak_type=False, device=None, committed=False):
        self._buf = buf
        self._weak = weak_type
        self._device = device
        self._committed = committed

    @property
    def shape(self):
        return self._buf.shape

    @property
    def dtype(self):
        return self._buf.dtype

    @property
    def aval(self):
        return ShapedArray(self._buf.shape, self._buf.dtype, self._weak)

    @property
    def weak_type(self):
        return self._weak

    @property
    def device(self):
        return self._device if self._device is not None else default_device()

    def devices(self):
        return {self.device}

    @property
    def committed(self):
        """Whether the array was placed on its device on purpose (see the class)."""
        return self._committed

    def _on(self, device):
        """The buffer of this array's value on `device` (itself where it is there)."""
        if self._device is device:
            return self._buf
        transfer = getattr(device.backend, "transfer", None)
        if transfer is not None and self._device is not None \
                and self._device.backend is device.backend:
            return transfer(self._buf, device)
        return device.backend.put(self._host(), device)

    def _host(self):
        """The value as a host NumPy array (no copy on the CPU)."""
        if self._device is None or self._device.platform == "cpu":
            return self._buf
        return self._device.backend.to_numpy(self._buf)

    def __array__(self, dtype=None, copy=None):
        value = self._host()
        if dtype is not None and np.dtype(dtype) != value.dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        view = value.view()
        view.flags.writeable = False  # the buffer is shared: keep the array immutable
        return view

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """Export the buffer through DLPack (zero-copy): `np.from_dlpack(x)`,
        `torch.from_dlpack(x)`. Consumers that speak DLPack 1.0 get a read-only view, since
        arrays are immutable; older ones get the buffer itself and must not write to it."""
        given = {"stream": stream, "max_version": max_version, "dl_device": dl_device,
                 "copy": copy}
        kwargs = {k: v for k, v in given.items() if v is not None}
        buf = self._buf
        if isinstance(buf, np.ndarray) and max_version is not None and not copy and tuple(
                max_version) >= (1, 0):
            buf = buf.view()
            buf.flags.writeable = False
        return buf.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._buf.__dlpack_device__()

    def item(self, *args):
        """The value of a one-element array as a Python scalar."""
        return self._host().item(*args)

    def tolist(self):
        """The array as nested Python lists of Python scalars."""
        return self._host().tolist()

    def __bool__(self):
        return bool(self._host())

    def __int__(self):
        return int(self._host())

    def __float__(self):
        return float(self._host())

    def __index__(self):
        if not dtypes.is_int(self.dtype) and not dtypes.is_bool(self.dtype):
            raise TypeError(f"only integer arrays can be used as an index, got {self.aval}")
        return int(self._host())

    def __complex__(self):
        return complex(self._host())

    def __format__(self, spec):
        if not self.shape:
            return format(self._host().item(), spec)
        return format(str(self), spec)

    def __repr__(self):
        body = np.array2string(
            np.asarray(self._host()), separator=", ", prefix="Array(", threshold=200
        )
        extra = f", dtype={self.dtype.name}"
        if self._weak:
            extra += ", weak_type=True"
        return f"Array({body}{extra})"

    def __str__(self):
        return str(np.asarray(self._host()))

    def __reduce__(self):
        return (_rebuild, (np.asarray(self._host()), self._weak))

    def copy(self):
        return self  # immutable: sharing is safe

    def block_until_ready(self):
        """Wait until the array's value has been computed (kernels on a GPU run
        asynchronously); returns the array."""
        sync = getattr(self._buf, "_mytorch_sync", None)
        if sync is not None:
            sync()
        elif self._device is not None and self._device.platform != "cpu":
            self._device.backend.block_until_ready(self._buf, self._device)
        return self

    def copy_to_host_async(self):
        return None


def _rebuild(value, weak):
    return from_numpy(value, weak_type=weak)


def from_numpy(value, dtype=None, weak_type=False, device=None, explicit=False):
    """A new ArrayImpl holding a copy of `value` (anything np.asarray accepts).

    `dtype` (if given) is canonicalised for x64, warning when `explicit`.
    """
    value = np.asarray(value)
    target = dtypes.canonicalize(dtype if dtype is not None else value.dtype, explicit=explicit)
    device = device if device is not None else default_device()
    buf = device.backend.put(value.astype(target, copy=False), device)
    return ArrayImpl(buf, weak_type, device)


def scalar_array(x, dtype=None, device=None):
    """A 0-d array for a Python scalar on `device` (default: the default device): weakly
    typed unless `dtype` is given.

    A given 64-bit `dtype` is kept even without x64: it comes from an operand made while
    x64 was on (an int64 array meeting a Python int), whose dtype the scalar must match.
    """
    if dtype is None:
        dtype, weak = dtypes.python_scalar_dtype(x)
    else:
        dtype, weak = dtypes.to_dtype(dtype), False
        if not dtypes.is_canonical(dtype):
            device = device if device is not None else default_device()
            return ArrayImpl(device.backend.put(np.asarray(x, dtype=dtype), device), False,
                             device)
    return from_numpy(np.asarray(x, dtype=dtype), dtype, weak, device)


_PY_SCALARS = (bool, int, float, complex)


def is_python_scalar(x):
    return type(x) in _PY_SCALARS or (isinstance(x, _PY_SCALARS) and not isinstance(x, np.generic))
