"""mt.save / mt.load: bit-exact round trips of every dtype, the safetensors layout read back
by hand and a file written by the safetensors package, pytree structures with and without
`like=`, clear errors for truncated/corrupted/mismatched files, and failed writes."""

import collections
import dataclasses
import json
import os
import struct

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mytorch as mt
import mytorch.numpy as mnp
from mytorch.errors import CheckpointError

ALL_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float16, ml_dtypes.bfloat16, np.float32, np.float64]
Pair = collections.namedtuple("Pair", ["first", "second"])


def _random_bits(rng, shape, dtype):
    """Arbitrary bit patterns of `dtype` (NaN payloads, infinities, subnormals included)."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    raw = rng.integers(0, 256, int(np.prod(shape)) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


# Round trips ------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
@settings(max_examples=6)
@given(shape=st.sampled_from([(), (0,), (3,), (2, 0, 3), (4, 5)]), seed=st.integers(0, 2**16))
def test_numpy_leaves_round_trip_bit_for_bit(tmp_path_factory, dtype, shape, seed):
    value = _random_bits(np.random.default_rng(seed), shape, dtype)
    path = tmp_path_factory.mktemp("roundtrip") / "x.safetensors"
    mt.save(path, {"v": value})
    out = mt.load(path)["v"]
    assert isinstance(out, np.ndarray)
    _same_bits(out, value)


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
def test_mt_arrays_round_trip_bit_for_bit(tmp_path, x64, dtype):
    rng = np.random.default_rng(0)
    tree = {"scalar": mt.device_put(_random_bits(rng, (), dtype)),
            "empty": mt.device_put(_random_bits(rng, (0, 2), dtype)),
            "matrix": mt.device_put(_random_bits(rng, (3, 4), dtype))}
    mt.save(tmp_path / "a.safetensors", tree)
    for like in (None, tree):
        out = mt.load(tmp_path / "a.safetensors", like=like)
        for k, value in tree.items():
            assert isinstance(out[k], mt.Array)
            _same_bits(out[k], value)


def test_64_bit_arrays_keep_their_dtype_without_x64(tmp_path):
    """An int64 array saved while x64 was on loads as int64 (as made) without x64 too."""
    mt.config.update("enable_x64", True)
    try:
        a = mnp.arange(3, dtype=mnp.int64) * (2**40)
    finally:
        mt.config.update("enable_x64", False)
    mt.save(tmp_path / "a.safetensors", [a])
    (out,) = mt.load(tmp_path / "a.safetensors")
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np.arange(3) * 2**40)


def test_containers_and_python_scalars_without_like(tmp_path):
    tree = {
        "d": {"b": 1, "a": [2.5, -0.0, float("inf"), float("nan")], 7: "seven"},
        "t": (True, None, "üñí", 2**70),
        "nt": Pair(mnp.ones(2), 3),
        "od": collections.OrderedDict([("z", 1), ("y", 2)]),
        "e": [[], (), {}],
    }
    mt.save(tmp_path / "c.safetensors", tree)
    out = mt.load(tmp_path / "c.safetensors")
    assert out["d"]["b"] == 1 and out["d"][7] == "seven"
    floats = out["d"]["a"]
    assert floats[:3] == [2.5, -0.0, float("inf")] and np.isnan(floats[3])
    assert str(floats[1]) == "-0.0"
    assert out["t"] == (True, None, "üñí", 2**70) and type(out["t"][0]) is bool
    assert type(out["nt"]).__name__ == "Pair" and out["nt"]._fields == ("first", "second")
    np.testing.assert_array_equal(out["nt"].first, np.ones(2))
    assert out["nt"].second == 3
    assert type(out["od"]) is collections.OrderedDict and list(out["od"]) == ["z", "y"]
    assert out["e"] == [[], (), {}]


_scalars = st.one_of(st.booleans(), st.integers(-2**70, 2**70), st.text(max_size=5),
                    st.floats(allow_nan=True, allow_infinity=True))
_leaves = st.one_of(_scalars, st.none(), st.builds(
    lambda shape, seed, dtype: _random_bits(np.random.default_rng(seed), shape, dtype),
    st.sampled_from([(), (0,), (2, 3)]), st.integers(0, 99), st.sampled_from(ALL_DTYPES)))
_trees = st.recursive(_leaves, lambda kids: st.one_of(
    st.lists(kids, max_size=3), st.lists(kids, max_size=3).map(tuple),
    st.dictionaries(st.one_of(st.text(max_size=3), st.integers(-5, 5)), kids, max_size=3)),
    max_leaves=8)


def _assert_same_tree(a, b):
    assert type(a) is type(b)
    if isinstance(a, dict):  # a dict comes back in sorted-key order, as tree_unflatten gives
        assert len(a) == len(b) and set(a) == set(b)
        for k in a:
            _assert_same_tree(a[k], b[k])
    elif isinstance(a, list | tuple):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _assert_same_tree(x, y)
    elif isinstance(a, np.ndarray):
        _same_bits(a, b)
    elif isinstance(a, float):
        assert struct.pack("<d", a) == struct.pack("<d", b)  # -0.0 and NaN included
    else:
        assert a == b


@settings(max_examples=15)
@given(tree=_trees)
def test_random_pytrees_round_trip(tmp_path_factory, tree):
    path = tmp_path_factory.mktemp("trees") / "t.safetensors"
    mt.save(path, tree)
    _assert_same_tree(mt.load(path), tree)
    _assert_same_tree(mt.load(path, like=tree), tree)


def test_a_single_array_and_none(tmp_path):
    mt.save(tmp_path / "a.safetensors", mnp.arange(4.0))
    np.testing.assert_array_equal(mt.load(tmp_path / "a.safetensors"), np.arange(4.0))
    mt.save(tmp_path / "n.safetensors", None)
    assert mt.load(tmp_path / "n.safetensors") is None


@mt.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class TinyModel:
    layers: list
    bias: object
    name: str = dataclasses.field(default="tiny", metadata={"static": True})


def _model(rows=5):
    return TinyModel(layers=[{"weight": mnp.ones((rows, 3))}, {"weight": mnp.zeros((2, rows))}],
                     bias=mnp.full((2,), 0.5, dtype=mnp.bfloat16))


def test_registered_class_comes_back_as_itself_with_like(tmp_path):
    model = _model()
    trained = TinyModel([{"weight": model.layers[0]["weight"] * 3}, model.layers[1]],
                        model.bias + 1)
    mt.save(tmp_path / "m.safetensors", trained)
    out = mt.load(tmp_path / "m.safetensors", like=model)
    assert type(out) is TinyModel and out.name == "tiny"
    np.testing.assert_array_equal(out.layers[0]["weight"], np.full((5, 3), 3.0))
    assert out.bias.dtype == mnp.bfloat16
    plain = mt.load(tmp_path / "m.safetensors")  # no like: a dict of the fields
    assert set(plain) == {"layers", "bias"}
    np.testing.assert_array_equal(plain["bias"], np.full((2,), 1.5))


def test_like_accepts_shape_dtype_structs_and_numpy(tmp_path):
    tree = {"w": mnp.ones((2, 3)), "step": 4, "np": np.arange(3, dtype=np.int32)}
    mt.save(tmp_path / "a.safetensors", tree)
    like = {"w": mt.ShapeDtypeStruct((2, 3), "float32"), "step": 0,
            "np": np.zeros(3, np.int32)}
    out = mt.load(tmp_path / "a.safetensors", like=like)
    assert isinstance(out["w"], mt.Array) and out["step"] == 4
    assert isinstance(out["np"], np.ndarray)
    like_eval = mt.eval_shape(lambda: tree)
    out = mt.load(tmp_path / "a.safetensors", like=like_eval)  # its step is an int32[]
    np.testing.assert_array_equal(out["w"], np.ones((2, 3)))
    assert isinstance(out["step"], mt.Array) and out["step"].dtype == np.int32
    assert int(out["step"]) == 4


def test_saved_file_is_safetensors_read_by_hand(tmp_path):
    """The layout of the spec in docs/checkpoints.md, parsed independently."""
    tree = {"a": np.arange(6, dtype=np.float32).reshape(2, 3),
            "b": mnp.array([1, 2], dtype=mnp.bfloat16), "n": 3}
    mt.save(tmp_path / "f.safetensors", tree)
    raw = (tmp_path / "f.safetensors").read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert (8 + n) % 8 == 0 and raw[8:9] == b"{"
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    assert header["a"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    assert header["b"] == {"dtype": "BF16", "shape": [2], "data_offsets": [24, 28]}
    np.testing.assert_array_equal(np.frombuffer(data[0:24], "<f4").reshape(2, 3),
                                  np.arange(6).reshape(2, 3))
    assert np.frombuffer(data[24:28], "<u2").tolist() == [0x3F80, 0x4000]  # bf16 1.0, 2.0
    meta = header["__metadata__"]
    assert meta["format"] == "mytorch" and all(isinstance(v, str) for v in meta.values())
    assert json.loads(meta["mytorch.tree"])["keys"] == ["a", "b", "n"]
    assert len(data) == 28


def _foreign_file(path, tensors):
    """A safetensors file as another tool writes it (no mytorch metadata)."""
    header, blobs, off = {}, [], 0
    for name, (code, arr) in tensors.items():
        b = arr.astype(arr.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def test_foreign_safetensors_file_loads_as_a_flat_dict(tmp_path):
    _foreign_file(tmp_path / "f.safetensors", {
        "emb.weight": ("F32", np.arange(4, dtype=np.float32).reshape(2, 2)),
        "ids": ("I32", np.array([7, 8], np.int32))})
    out = mt.load(tmp_path / "f.safetensors")
    assert sorted(out) == ["emb.weight", "ids"]
    np.testing.assert_array_equal(out["ids"], [7, 8])
    with pytest.raises(CheckpointError, match="records no pytree structure"):
        mt.load(tmp_path / "f.safetensors", like={"ids": mnp.zeros(2, mnp.int32)})


def test_prng_keys_round_trip_typed_and_raw(tmp_path):
    key = mt.random.key(7)
    keys = mt.random.split(mt.random.key(3), 4)
    raw = mt.random.PRNGKey(5)
    tree = {"key": key, "keys": keys, "raw": raw}
    mt.save(tmp_path / "k.safetensors", tree)
    for like in (None, tree):
        out = mt.load(tmp_path / "k.safetensors", like=like)
        assert type(out["key"]) is type(key) and out["keys"].shape == (4,)
        _same_bits(mt.random.key_data(out["key"]), mt.random.key_data(key))
        _same_bits(mt.random.key_data(out["keys"]), mt.random.key_data(keys))
        _same_bits(out["raw"], raw)
        np.testing.assert_array_equal(mt.random.uniform(out["keys"][2], (3,)),
                                      mt.random.uniform(keys[2], (3,)))
    with pytest.raises(CheckpointError, match=r"leaf \['keys'\]\[<flat index 0>\] has shape "
                       r"\(4, 2\), expected \(2, 2\)"):
        mt.load(tmp_path / "k.safetensors", like={**tree, "keys": mt.random.split(key)})


def test_an_nn_module_and_an_adam_state_come_back_as_themselves(tmp_path):
    cell = mt.nn.GRUCell(3, 4, key=mt.random.key(0))
    params = {"w": mnp.ones((2, 3))}
    opt = mt.optim.adam(1e-2)
    opt_state = opt.init(params)
    _, opt_state = opt.update({"w": mnp.full((2, 3), 0.5)}, opt_state, params)
    mt.save(tmp_path / "m.safetensors", {"cell": cell, "opt_state": opt_state})
    fresh = {"cell": mt.nn.GRUCell(3, 4, key=mt.random.key(1)),
             "opt_state": opt.init(params)}
    out = mt.load(tmp_path / "m.safetensors", like=fresh)
    assert type(out["cell"]) is type(cell)
    x, h = mnp.ones(3), mnp.zeros(4)
    np.testing.assert_array_equal(out["cell"](x, h), cell(x, h))
    assert type(out["opt_state"][0]) is type(opt_state[0])
    assert int(out["opt_state"][0].count) == 1
    _same_bits(out["opt_state"][0].nu["w"], opt_state[0].nu["w"])
    plain = mt.load(tmp_path / "m.safetensors")
    assert sorted(plain["cell"]) == ["bias", "bias_n", "weight_hh", "weight_ih"]
    assert plain["opt_state"][0].count == 1 and type(plain["opt_state"][0]).__name__ == (
        "ScaleByAdamState")
    with pytest.raises(CheckpointError, match=r"leaf \['cell'\]\.weight_ih has shape \(12, 3\), "
                       r"expected \(15, 3\)"):
        mt.load(tmp_path / "m.safetensors",
                like={**fresh, "cell": mt.nn.GRUCell(3, 5, key=mt.random.key(1))})


# Written by the `safetensors` package (0.8.0, `safetensors.numpy.save`) from
# {"w": f32[[1.5, -2.0]], "h": bf16[1.0, 3.0], "i": int64 -7, "m": bool[True, False, True]}
# with metadata {"note": "ok"}.
_SAFETENSORS_BYTES = (
    b'\x00\x01\x00\x00\x00\x00\x00\x00{"__metadata__":{"note":"ok"},"i":{"dtype":"I64",'
    b'"shape":[],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[1,2],"data_offsets":[8,16]},'
    b'"h":{"dtype":"BF16","shape":[2],"data_offsets":[16,20]},"m":{"dtype":"BOOL","shape":[3],'
    b'"data_offsets":[20,23]}}      \xf9\xff\xff\xff\xff\xff\xff\xff\x00\x00\xc0?\x00\x00'
    b'\x00\xc0\x80?@@\x01\x00\x01'
)


def test_a_file_written_by_the_safetensors_package_loads(tmp_path):
    path = tmp_path / "ext.safetensors"
    path.write_bytes(_SAFETENSORS_BYTES)
    out = mt.load(path)
    assert sorted(out) == ["h", "i", "m", "w"]
    np.testing.assert_array_equal(out["w"], [[1.5, -2.0]])
    assert out["h"].dtype == ml_dtypes.bfloat16 and out["h"].tolist() == [1.0, 3.0]
    assert out["i"].dtype == np.int64 and int(out["i"]) == -7
    assert out["m"].tolist() == [True, False, True]


# Errors ----------------------------------------------------------------------------------------

def test_like_mismatches_name_the_first_leaf_by_path(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    mt.save(path, {"layers": [{"weight": mnp.ones((4, 3))}], "step": 1})
    like = {"layers": [{"weight": mnp.ones((5, 3))}], "step": 0}
    with pytest.raises(CheckpointError, match=r"checkpoint .*ckpt\.safetensors: leaf "
                       r"\['layers'\]\[0\]\['weight'\] has shape \(4, 3\), expected \(5, 3\)"
                       r".*test_checkpoints\.py"):
        mt.load(path, like=like)
    like = {"layers": [{"weight": mnp.ones((4, 3), mnp.bfloat16)}], "step": 0}
    with pytest.raises(CheckpointError, match=r"\['weight'\] has dtype float32, expected bfloat16"):
        mt.load(path, like=like)
    with pytest.raises(CheckpointError, match=r"leaf \['step'\] is a int in the file, expected "
                       r"a Python float"):
        mt.load(path, like={"layers": [{"weight": mnp.ones((4, 3))}], "step": 0.0})
    with pytest.raises(CheckpointError, match=r"leaf \['step'\] found where `like` has leaf "
                       r"\['steps'\]"):
        mt.load(path, like={"layers": [{"weight": mnp.ones((4, 3))}], "steps": 0})
    with pytest.raises(CheckpointError, match=r"leaf \['step'\] is not in `like`"):
        mt.load(path, like={"layers": [{"weight": mnp.ones((4, 3))}]})
    with pytest.raises(CheckpointError, match=r"leaf \['z'\] expected by `like` is missing"):
        mt.load(path, like={"layers": [{"weight": mnp.ones((4, 3))}], "step": 0, "z": 1})
    with pytest.raises(CheckpointError, match=r"leaf \['step'\] is a Python int in the file, "
                       r"expected an array of shape \(2,\)"):
        mt.load(path, like={"layers": [{"weight": mnp.ones((4, 3))}], "step": mnp.zeros(2)})
    with pytest.raises(CheckpointError, match=r"leaf \['step'\] is a Python int in the file, "
                       r"expected an array of shape \(\) and dtype float32"):
        mt.load(path, like={"layers": [{"weight": mnp.ones((4, 3))}], "step": mnp.zeros(())})
    with pytest.raises(TypeError, match=r"load: the `like` leaf \['step'\] is a "
                       r"builtin_function_or_method; `like` leaves must be arrays"):
        mt.load(path, like={"layers": [{"weight": mnp.ones((4, 3))}], "step": len})
    model = _model(rows=4)
    mt.save(path, model)
    with pytest.raises(CheckpointError, match=r"leaf \.layers\[0\]\['weight'\] has shape "
                       r"\(4, 3\), expected \(5, 3\)"):
        mt.load(path, like=_model(rows=5))


def _good_file(tmp_path):
    path = tmp_path / "good.safetensors"
    mt.save(path, {"a": mnp.arange(6.0).reshape(2, 3), "b": mnp.ones(4, mnp.int32)})
    return path, path.read_bytes()


def _rewrite_header(raw, edit):
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    edit(header)
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + raw[8 + n:]


@pytest.mark.parametrize("cut", [0, 5, 8, 40, -1, -13])
def test_truncated_files_raise_naming_the_file(tmp_path, cut):
    _, raw = _good_file(tmp_path)
    bad = tmp_path / "cut.safetensors"
    bad.write_bytes(raw[:cut] if cut >= 0 else raw[:len(raw) + cut])
    with pytest.raises(CheckpointError, match=r"checkpoint .*cut\.safetensors: .*"
                       r"(too short|truncated|past the end)"):
        mt.load(bad)


def _set(entry, key, value):
    def edit(h):
        h[entry][key] = value
    return edit


CORRUPTIONS = [
    ("json", lambda raw: raw[:8] + b"{not json" + raw[17:], r"header is not valid JSON"),
    ("array_header", lambda raw: struct.pack("<Q", 6) + b"[1, 2]", r"a JSON list, not an object"),
    ("past_end", lambda raw: _rewrite_header(raw, _set("b", "data_offsets", [24, 4000])),
     r"tensor 'b' ends at byte 4000, past the end of the data section \(40 bytes\)"),
    ("byte_count", lambda raw: _rewrite_header(raw, _set("a", "shape", [2, 2])),
     r"tensor 'a' holds 24 bytes, but shape \(2, 2\) of F32 needs 16"),
    ("overlap", lambda raw: _rewrite_header(raw, _set("b", "data_offsets", [8, 24])),
     r"tensor 'b' holds 16 bytes|overlapping or missing"),
    ("dtype", lambda raw: _rewrite_header(raw, _set("a", "dtype", "F128")),
     r"tensor 'a' has unsupported dtype 'F128'"),
    ("shape", lambda raw: _rewrite_header(raw, _set("a", "shape", [2, -3])),
     r"tensor 'a' has a bad shape"),
    ("tree_json", lambda raw: _rewrite_header(
        raw, _set("__metadata__", "mytorch.tree", "{oops")), r"pytree structure .*not valid JSON"),
    ("tree_kind", lambda raw: _rewrite_header(
        raw, _set("__metadata__", "mytorch.tree", '{"t": "pickle", "v": "os.system"}')),
     r"unknown node kind 'pickle'"),
    ("tree_name", lambda raw: _rewrite_header(
        raw, _set("__metadata__", "mytorch.tree", '{"t": "array", "name": "zzz"}')),
     r"names tensor 'zzz', which the header does not list"),
]


@pytest.mark.parametrize("name,corrupt,message", CORRUPTIONS, ids=[c[0] for c in CORRUPTIONS])
def test_corrupted_files_raise_naming_the_file_and_the_fault(tmp_path, name, corrupt, message):
    _, raw = _good_file(tmp_path)
    bad = tmp_path / f"{name}.safetensors"
    bad.write_bytes(corrupt(raw))
    with pytest.raises(CheckpointError, match=rf"checkpoint .*{name}\.safetensors: .*"
                       rf"({message})"):
        mt.load(bad)
    assert issubclass(CheckpointError, ValueError)


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError):
        mt.load(tmp_path / "nope.safetensors")


def test_save_rejects_what_a_checkpoint_cannot_hold(tmp_path):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match=r"save: the leaf at \['f'\] is a builtin_function_or_method.*"
                       r"test_checkpoints\.py"):
        mt.save(path, {"f": len})
    with pytest.raises(TypeError, match=r"save: the dict at \['d'\] has a key \(1, 2\) of "
                       r"type tuple"):
        mt.save(path, {"d": {(1, 2): 3}})
    with pytest.raises(TypeError, match=r"save: the leaf at \[0\] has dtype complex64"):
        mt.save(path, [np.ones(2, np.complex64)])

    def inside_jit(x):
        mt.save(path, {"x": x})
        return x

    with pytest.raises(TypeError, match=r"save: the leaf at \['x'\] is a traced value"):
        mt.jit(inside_jit)(mnp.ones(2))
    assert not path.exists() and os.listdir(tmp_path) == []


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / "w.safetensors"
    mt.save(path, {"w": mnp.zeros(3)})

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        mt.save(path, {"w": mnp.ones(3)})
    monkeypatch.undo()
    assert os.listdir(tmp_path) == ["w.safetensors"]
    np.testing.assert_array_equal(mt.load(path)["w"], np.zeros(3))
