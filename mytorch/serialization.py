"""Checkpoints: `save(path, tree)` / `load(path, like=None)` in the safetensors file format.

A file is: 8 bytes (little-endian u64) giving the header's length N; N bytes of UTF-8 JSON
mapping each tensor's name to ``{"dtype", "shape", "data_offsets": [begin, end]}`` (offsets
relative to the data section), plus ``"__metadata__"`` (a str -> str map) whose entry
``"mytorch.tree"`` is the pytree structure as JSON; then the data section: each tensor's bytes,
C order, little-endian, back to back. Nothing in a file is imported or executed: the structure
is a declarative description of containers (see docs/checkpoints.md for the full spec).

    mt.save("ckpt.safetensors", {"params": params, "step": 10})
    state = mt.load("ckpt.safetensors", like={"params": params, "step": 0})
"""

import collections
import json
import math
import os
import struct
import sys
import tempfile

import numpy as np

from mytorch import random as _random
from mytorch.core import dtypes
from mytorch.core.array import Array, ArrayImpl, from_numpy
from mytorch.core.backend import default_device
from mytorch.core.source_info import user_error
from mytorch.core.tree_nodes import _dispatch
from mytorch.core.tree_paths import DictKey, FlattenedIndexKey, GetAttrKey, SequenceKey
from mytorch.core.tree_util import tree_flatten_with_path, tree_structure
from mytorch.errors import CheckpointError

__all__ = ["FORMAT_VERSION", "load", "save"]

FORMAT_VERSION = "1"
_MAX_HEADER = 100 * 1024 * 1024  # the safetensors limit: refuse absurd header lengths
_TREE_KEY = "mytorch.tree"

# safetensors dtype codes <-> NumPy dtypes (every dtype an mt.Array can hold)
_CODES = {
    dtypes.bool_: "BOOL", dtypes.uint8: "U8", dtypes.int8: "I8", dtypes.uint16: "U16",
    dtypes.int16: "I16", dtypes.uint32: "U32", dtypes.int32: "I32", dtypes.uint64: "U64",
    dtypes.int64: "I64", dtypes.float16: "F16", dtypes.bfloat16: "BF16",
    dtypes.float32: "F32", dtypes.float64: "F64",
}
_DTYPES = {code: dt for dt, code in _CODES.items()}
_BIG_ENDIAN = sys.byteorder == "big"


# Encoding a pytree -------------------------------------------------------------------------------

class _Writer:
    """Walks a pytree once: builds its JSON description and collects the array leaves."""

    def __init__(self):
        self.arrays = []  # (name, np.ndarray) in file order
        self.names = set()

    def encode(self, x, path):
        if x is None:
            return {"t": "none"}
        if type(x) in (bool, int, float, str):
            return _encode_scalar(x)
        if isinstance(x, np.ndarray | np.generic | Array):
            return self._encode_array(x, path)
        node = _dispatch[type(x)]
        if node is None:
            raise user_error(TypeError, f"save: the leaf at {_pathstr(path)} is a "
                             f"{type(x).__name__}, which a checkpoint cannot hold; leaves must "
                             "be arrays, Python bool/int/float/str or None")
        if type(x) in (list, tuple):
            kids = [self.encode(c, path + (SequenceKey(i),)) for i, c in enumerate(x)]
            return {"t": type(x).__name__, "c": kids}
        if isinstance(x, dict) and type(x) in (dict, collections.OrderedDict,
                                               collections.defaultdict):
            return self._encode_dict(x, path)
        fields = getattr(type(x), "_fields", None)
        if isinstance(x, tuple) and isinstance(fields, tuple):
            kids = [self.encode(c, path + (GetAttrKey(f),)) for f, c in zip(fields, x)]
            return {"t": "namedtuple", "name": type(x).__name__, "fields": list(fields),
                    "c": kids}
        pairs, _ = node.flatten_with_keys(x)
        keys = [k for k, _ in pairs]
        return {"t": "node", "type": f"{type(x).__module__}.{type(x).__qualname__}",
                "keys": [str(k) for k in keys], "names": [_simple(k) for k in keys],
                "c": [self.encode(c, path + (k,)) for k, c in pairs]}

    def _encode_dict(self, x, path):
        items = list(x.items()) if type(x) is collections.OrderedDict else [
            (k, x[k]) for k in _sorted(x)]
        for k, _ in items:
            if type(k) not in (str, int, bool):
                raise user_error(TypeError, f"save: the dict at {_pathstr(path)} has a key "
                                 f"{k!r} of type {type(k).__name__}; checkpoint dict keys must "
                                 "be str or int")
        kind = "odict" if type(x) is collections.OrderedDict else "dict"
        return {"t": kind, "keys": [k for k, _ in items],
                "c": [self.encode(v, path + (DictKey(k),)) for k, v in items]}

    def _encode_array(self, x, path):
        if isinstance(x, Array) and not isinstance(x, ArrayImpl):
            raise user_error(TypeError, f"save: the leaf at {_pathstr(path)} is a traced "
                             f"value ({x.aval}); save concrete arrays, outside jit/vmap/grad")
        kind = "numpy" if isinstance(x, np.ndarray) else (
            "numpy_scalar" if isinstance(x, np.generic) else "array")
        value = np.asarray(x)
        if value.dtype == dtypes.float0:
            return {"t": "float0", "shape": list(value.shape)}
        if value.dtype not in _CODES:
            raise user_error(TypeError, f"save: the leaf at {_pathstr(path)} has dtype "
                             f"{value.dtype}, which a checkpoint cannot hold (supported: "
                             f"{', '.join(str(d) for d in _CODES)})")
        name = self._name(path)
        self.arrays.append((name, value))
        out = {"t": kind, "name": name}
        if kind == "array" and x.weak_type:
            out["weak"] = True
        return out

    def _name(self, path):
        name = ".".join(_simple(k) for k in path) or "value"
        if name in self.names or name == "__metadata__":
            name = f"{name}#{len(self.arrays)}"
        self.names.add(name)
        return name


def _encode_scalar(x):
    if type(x) is float:  # exact, and inf survives JSON; a NaN keeps its sign and payload
        if math.isnan(x):
            return {"t": "float", "v": "nan", "bits": struct.unpack("<Q", struct.pack("<d", x))[0]}
        return {"t": "float", "v": float.hex(x)}
    return {"t": type(x).__name__, "v": x}


def _sorted(d):
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=lambda k: (type(k).__qualname__, repr(k)))


def _simple(k):
    for cls, attr in ((SequenceKey, "idx"), (DictKey, "key"), (GetAttrKey, "name"),
                      (FlattenedIndexKey, "key")):
        if isinstance(k, cls):
            return str(getattr(k, attr))
    return str(k)


def _pathstr(path):
    return "".join(str(k) for k in path) or "(root)"


# Writing -----------------------------------------------------------------------------------------

def save(path, tree):
    """Write the pytree `tree` to `path` atomically, in the safetensors format.

    Args:
        path: a file name (str or os.PathLike); `.safetensors` is the usual suffix.
        tree: a pytree of arrays (mt.Array of any shape, 0-d and size-0 included; NumPy
            arrays and scalars) and Python bool/int/float/str/None, in dicts (str or int
            keys), lists, tuples, namedtuples and registered node types (mt.nn modules,
            mt.optim states, PRNG keys).
    Returns:
        The path written, as a str.
    Raises:
        TypeError: a leaf a checkpoint cannot hold (a traced value, an object, a dtype
            outside bool/int8-64/uint8-64/float16/bfloat16/float32/float64).

    The file is written to a temporary file in the same folder, flushed and fsynced, then
    renamed onto `path` (and the folder fsynced): a crash leaves the previous file intact.

    Example:
        >>> mt.save("/tmp/w.safetensors", {"w": mnp.ones((2, 3)), "step": 7})
        '/tmp/w.safetensors'
    """
    path = os.fspath(path)
    writer = _Writer()
    tree_json = writer.encode(tree, ())
    header, offset = {}, 0
    for name, value in writer.arrays:
        nbytes = value.size * value.dtype.itemsize
        header[name] = {"dtype": _CODES[value.dtype], "shape": list(value.shape),
                        "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    header["__metadata__"] = {"format": "mytorch", "mytorch.version": FORMAT_VERSION,
                              _TREE_KEY: json.dumps(tree_json, separators=(",", ":"))}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-(8 + len(raw)) % 8)  # the data section starts 8-byte aligned

    def chunks():
        yield struct.pack("<Q", len(raw)) + raw
        for _, value in writer.arrays:
            if _BIG_ENDIAN:
                value = value.astype(value.dtype.newbyteorder("<"))
            yield memoryview(np.ascontiguousarray(value).reshape(-1).view(np.uint8))

    atomic_write(path, chunks())
    return path


def atomic_write(path, chunks):
    """Write the byte chunks to `path` through a temporary file in the same folder
    (`.<name>.<random>.tmp`), fsync it, rename it onto `path` and fsync the folder."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(folder)


def fsync_dir(folder):
    """Make a rename or unlink in `folder` durable (a no-op where folders cannot be opened)."""
    try:
        dfd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


# Reading -----------------------------------------------------------------------------------------

def _fail(path, what):
    return user_error(CheckpointError, f"checkpoint {path}: {what}")


def _read_header(f, path, size):
    if size < 8:
        raise _fail(path, f"the file is {size} bytes long, too short for a header (truncated?)")
    (n,) = struct.unpack("<Q", f.read(8))
    if n > _MAX_HEADER or n > size - 8:
        raise _fail(path, f"the header length {n} runs past the end of the file ({size} "
                    "bytes): truncated, or not a safetensors file")
    try:
        header = json.loads(f.read(n).decode("utf-8"))
    except (UnicodeDecodeError, RecursionError, json.JSONDecodeError) as e:
        raise _fail(path, f"the header is not valid JSON ({e})") from None
    if not isinstance(header, dict):
        raise _fail(path, f"the header is a JSON {type(header).__name__}, not an object")
    return header, 8 + n


def _tensor_specs(header, path, data_len):
    """name -> (dtype, shape, begin, end), each checked against the data section."""
    specs = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        ok = isinstance(entry, dict) and {"dtype", "shape", "data_offsets"} <= entry.keys()
        if not ok:
            raise _fail(path, f"tensor {name!r} lacks dtype/shape/data_offsets in the header")
        dt = _DTYPES.get(entry["dtype"])
        if dt is None:
            raise _fail(path, f"tensor {name!r} has unsupported dtype {entry['dtype']!r}")
        shape, offs = entry["shape"], entry["data_offsets"]
        if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
            raise _fail(path, f"tensor {name!r} has a bad shape {shape!r}")
        if not (isinstance(offs, list) and len(offs) == 2
                and all(type(o) is int and o >= 0 for o in offs) and offs[0] <= offs[1]):
            raise _fail(path, f"tensor {name!r} has bad data_offsets {offs!r}")
        if offs[1] > data_len:
            raise _fail(path, f"the data of tensor {name!r} ends at byte {offs[1]}, past the "
                        f"end of the data section ({data_len} bytes): the file is truncated")
        need = math.prod(shape) * dt.itemsize
        if offs[1] - offs[0] != need:
            raise _fail(path, f"tensor {name!r} holds {offs[1] - offs[0]} bytes, but shape "
                        f"{tuple(shape)} of {entry['dtype']} needs {need}")
        specs[name] = (dt, tuple(shape), offs[0], offs[1])
    ordered = sorted(specs.items(), key=lambda kv: kv[1][2:])
    end = 0
    for name, (_, _, begin, stop) in ordered:
        if begin != end:
            raise _fail(path, f"tensor {name!r} starts at byte {begin} of the data section, "
                        f"expected {end}: overlapping or missing data")
        end = stop
    if end != data_len:
        raise _fail(path, f"the data section is {data_len} bytes but its tensors cover {end}")
    return specs


def _read_tensor(f, path, name, spec, data_start):
    dt, shape, begin, end = spec
    buf = np.empty(end - begin, np.uint8)
    f.seek(data_start + begin)
    if f.readinto(memoryview(buf)) != end - begin:
        raise _fail(path, f"the data of tensor {name!r} is cut short: the file is truncated")
    value = buf.view(dt.newbyteorder("<") if _BIG_ENDIAN else dt).reshape(shape)
    return value.astype(dt) if _BIG_ENDIAN else value


def load(path, like=None):
    """Read a pytree written by `save`.

    Args:
        path: the file name.
        like: optional pytree giving the structure to return (a model, an optimiser state,
            a dict of arrays; leaves may be arrays, `mt.ShapeDtypeStruct`s or Python
            scalars). Every leaf's key path, shape and dtype is checked against the file.
    Returns:
        With `like`: a pytree of `like`'s structure (registered classes come back as
        themselves) holding the file's values; arrays as `mt.Array`, or NumPy arrays where
        `like` has NumPy arrays. Without `like`: plain containers: dicts, lists, tuples,
        None, Python scalars, arrays as saved (mt.Array, NumPy array or NumPy scalar),
        namedtuples as `collections.namedtuple` types of the saved name and fields,
        OrderedDicts as OrderedDicts, typed PRNG keys as keys, and any other registered
        node (a module, a loss scale) as a dict from its children's names to the children.
        A safetensors file written by another tool loads as a dict from tensor name to
        array.
    Raises:
        FileNotFoundError: no such file.
        CheckpointError: the file is truncated or corrupted (the message says how), or does
            not match `like` (the message names the first mismatched leaf by its path).

    Example:
        >>> mt.load("/tmp/w.safetensors")["step"]
        7
    """
    path = os.fspath(path)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header, data_start = _read_header(f, path, size)
        specs = _tensor_specs(header, path, size - data_start)
        meta = header.get("__metadata__", {})
        if not isinstance(meta, dict):
            raise _fail(path, "the header's __metadata__ is not an object")
        if _TREE_KEY not in meta:  # a plain safetensors file
            if like is not None:
                raise _fail(path, "the file records no pytree structure (not written by "
                            "mt.save), so it cannot be matched to `like`; load it without")
            return {n: _to_array(_read_tensor(f, path, n, s, data_start))
                    for n, s in sorted(specs.items())}
        try:
            tree_json = json.loads(meta[_TREE_KEY])
        except (TypeError, RecursionError, json.JSONDecodeError) as e:
            raise _fail(path, f"the pytree structure in the metadata is not valid JSON ({e})"
                        ) from None
        reader = _Reader(f, path, specs, data_start)
        if like is None:
            return reader.build(tree_json)
        return _load_like(reader, tree_json, like)


class _Reader:
    """Turns the JSON description back into values, reading each array once."""

    def __init__(self, f, path, specs, data_start):
        self.f, self.path, self.specs, self.data_start = f, path, specs, data_start
        self.namedtuples = {}

    def node(self, j, what="a node"):
        if not isinstance(j, dict) or not isinstance(j.get("t"), str):
            raise _fail(self.path, f"the pytree structure holds {what} that is not a "
                        f"{{'t': kind}} object: {str(j)[:80]}")
        kids = j.get("c", [])
        if not isinstance(kids, list):
            raise _fail(self.path, f"a {j['t']!r} node's children are not a list")
        return j["t"], kids

    def array(self, j):
        name = j.get("name")
        if name not in self.specs:
            raise _fail(self.path, f"the pytree structure names tensor {name!r}, which the "
                        "header does not list")
        return _read_tensor(self.f, self.path, name, self.specs[name], self.data_start)

    def leaf(self, j, kind):
        """The value of a leaf description; np.ndarray for arrays of any saved kind."""
        if kind in ("array", "numpy", "numpy_scalar"):
            return self.array(j)
        if kind == "float0":
            return np.zeros(tuple(j.get("shape", ())), dtypes.float0)
        v = j.get("v")
        if kind == "float":
            try:
                if "bits" in j:
                    return struct.unpack("<d", struct.pack("<Q", j["bits"]))[0]
                return float.fromhex(v)
            except (TypeError, ValueError, struct.error):
                raise _fail(self.path, f"bad float value {v!r} in the structure") from None
        expect = {"int": int, "bool": bool, "str": str}.get(kind)
        if expect is None:
            raise _fail(self.path, f"unknown node kind {kind!r} in the pytree structure")
        if type(v) is not expect:
            raise _fail(self.path, f"a {kind} leaf holds {v!r}")
        return v

    def build(self, j):
        kind, kids = self.node(j)
        if kind == "none":
            return None
        if kind in ("list", "tuple"):
            return (list if kind == "list" else tuple)(self.build(c) for c in kids)
        if kind in ("dict", "odict"):
            keys = self._keys(j, kids)
            cls = dict if kind == "dict" else collections.OrderedDict
            return cls(zip(keys, (self.build(c) for c in kids), strict=True))
        if kind == "namedtuple":
            return self._namedtuple(j, kids)(*(self.build(c) for c in kids))
        if kind == "node":
            names = self._keys(j, kids, "names")
            children = [self.build(c) for c in kids]
            if j.get("type") == _KEY_TYPE and len(children) == 1:  # a typed PRNG key
                return _rebuild_key(self.path, children[0])
            return dict(zip(names, children, strict=True))
        value = self.leaf(j, kind)
        if kind == "array":
            return _to_array(value, j.get("weak", False))
        if kind == "numpy_scalar":
            return value[()]
        return value

    def _keys(self, j, kids, field="keys"):
        keys = j.get(field)
        if not isinstance(keys, list) or len(keys) != len(kids):
            raise _fail(self.path, f"a {j['t']!r} node's {field} do not match its children")
        return keys

    def _namedtuple(self, j, kids):
        name, fields = j.get("name"), tuple(self._keys(j, kids, "fields"))
        key = (name, fields)
        if key not in self.namedtuples:
            try:  # a fresh class from the saved names: nothing is imported
                self.namedtuples[key] = collections.namedtuple(name, fields)
            except (TypeError, ValueError) as e:
                raise _fail(self.path, f"bad namedtuple {name!r} in the structure ({e})"
                            ) from None
        return self.namedtuples[key]

    def leaves_with_paths(self, j, path=""):
        """[(path string, leaf description)] in flattening order (None nodes hold none)."""
        kind, kids = self.node(j)
        if kind == "none":
            return []
        if kind in ("list", "tuple"):
            keys = [f"[{i}]" for i in range(len(kids))]
        elif kind in ("dict", "odict"):
            keys = [f"[{k!r}]" for k in self._keys(j, kids)]
        elif kind == "namedtuple":
            keys = [f".{f}" for f in self._keys(j, kids, "fields")]
        elif kind == "node":
            keys = self._keys(j, kids)
        else:
            return [(path or "(root)", j)]
        out = []
        for k, c in zip(keys, kids, strict=True):
            out.extend(self.leaves_with_paths(c, path + str(k)))
        return out


_KEY_TYPE = "mytorch.random.keys.KeyArray"


def _rebuild_key(path, data):
    """A typed key from its uint32 data: the one registered class rebuilt without `like`,
    through mt.random's own constructor (the type name is compared, never imported)."""
    try:
        return _random.wrap_key_data(data)
    except (TypeError, ValueError) as e:
        raise _fail(path, f"a PRNG key's data is not valid key data ({e})") from None


def _to_array(value, weak=False):
    """An mt.Array of exactly `value`'s dtype (a 64-bit dtype is kept even without x64, as
    for an array made while x64 was on)."""
    if dtypes.is_canonical(value.dtype):
        return from_numpy(value, weak_type=weak)
    device = default_device()
    return ArrayImpl(device.backend.put(value, device), weak, device)


def _describe_like(leaf):
    if type(leaf) in (bool, int, float, str):
        return f"a Python {type(leaf).__name__}"
    return f"an array of shape {tuple(leaf.shape)} and dtype {np.dtype(leaf.dtype)}"


def _load_like(reader, tree_json, like):
    pairs, treedef = tree_flatten_with_path(like)
    stored = reader.leaves_with_paths(tree_json)
    path = reader.path
    for i, (kpath, _) in enumerate(pairs):
        want = _pathstr(kpath)
        if i >= len(stored):
            raise _fail(path, f"leaf {want} expected by `like` is missing (the file has "
                        f"{len(stored)} leaves, `like` has {len(pairs)})")
        if stored[i][0] != want:
            raise _fail(path, f"leaf {stored[i][0]} found where `like` has leaf {want} (the "
                        f"structures differ; `like` is {tree_structure(like)})")
    if len(stored) > len(pairs):
        raise _fail(path, f"leaf {stored[len(pairs)][0]} is not in `like` (the file has "
                    f"{len(stored)} leaves, `like` has {len(pairs)})")
    out = []
    for (_, leaf), (name, j) in zip(pairs, stored, strict=True):
        out.append(_match_leaf(reader, name, j, leaf))
    return treedef.unflatten(out)


_SCALAR_KINDS = {"bool": dtypes.is_bool, "int": dtypes.is_int, "float": dtypes.is_float}


def _match_leaf(reader, name, j, leaf):
    path = reader.path
    kind = j.get("t")
    is_scalar = type(leaf) in (bool, int, float, str)
    if not is_scalar and not (hasattr(leaf, "shape") and hasattr(leaf, "dtype")):
        raise user_error(TypeError, f"load: the `like` leaf {name} is a {type(leaf).__name__}; "
                         "`like` leaves must be arrays, ShapeDtypeStructs or Python scalars")
    if is_scalar:
        if kind != type(leaf).__name__:
            raise _fail(path, f"leaf {name} is a {kind} in the file, expected "
                        f"{_describe_like(leaf)}")
        return reader.leaf(j, kind)
    if kind in _SCALAR_KINDS and tuple(leaf.shape) == () and _SCALAR_KINDS[kind](
            np.dtype(leaf.dtype)):  # a Python scalar that eval_shape made a 0-d array
        return _to_array(np.asarray(reader.leaf(j, kind), np.dtype(leaf.dtype)))
    if kind not in ("array", "numpy", "numpy_scalar", "float0"):
        raise _fail(path, f"leaf {name} is a Python {kind} in the file, expected "
                    f"{_describe_like(leaf)}")
    if kind == "float0":
        shape, dt = tuple(j.get("shape", ())), dtypes.float0
    else:
        spec = reader.specs.get(j.get("name"))
        shape, dt = (spec[1], spec[0]) if spec is not None else (None, None)
    want_shape, want_dt = tuple(leaf.shape), np.dtype(leaf.dtype)
    if shape is not None and shape != want_shape:
        raise _fail(path, f"leaf {name} has shape {shape}, expected {want_shape}")
    if dt is not None and dt != want_dt:
        raise _fail(path, f"leaf {name} has dtype {dt}, expected {want_dt}")
    value = reader.leaf(j, kind)
    if isinstance(leaf, np.ndarray):
        return value
    if isinstance(leaf, np.generic):
        return value[()]
    return value if kind == "float0" else _to_array(value, j.get("weak", False))
