"""The examples run end to end (shortened where a full run takes minutes) and reach their
stated metrics; the notebook executes cell by cell."""

import importlib.util
import sys
import json
import pathlib

import numpy as np
import pytest

import mytorch as mt

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def load(name):
    """The example `name` as a module, imported as `python examples/<name>.py` runs it: with
    the examples folder on the path (an example may import another's pieces)."""
    if str(EXAMPLES) not in sys.path:
        sys.path.insert(0, str(EXAMPLES))
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mnist_mlp_default_run_reaches_97_percent(tmp_path):
    """The README's main command: the default run on the bundled digits."""
    mnist = load("mnist_mlp")
    result = mnist.train(mnist.parse_args(["--out", str(tmp_path)]), progress=False)
    assert result["test_accuracy"] >= 0.97
    saved = mt.load(tmp_path / "mnist_mlp.safetensors",
                    like={"model": result["model"], "opt_state": result["opt_state"],
                          "step": 0, "key": mt.random.key(0)})
    assert saved["step"] == result["steps"]
    for a, b in zip(mt.tree_util.tree_leaves(saved["model"]),
                    mt.tree_util.tree_leaves(result["model"]), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    if result["plot"] is not None:
        assert pathlib.Path(result["plot"]).stat().st_size > 1000


def test_mnist_mlp_reads_idx_files(tmp_path):
    """--data-dir: MNIST's IDX format (gzipped or not), parsed and trained on."""
    import gzip

    rng = np.random.default_rng(0)

    def write(name, array, gz):
        header = bytes([0, 0, 0x08, array.ndim]) + np.array(array.shape, ">u4").tobytes()
        data = header + array.astype(np.uint8).tobytes()
        path = tmp_path / (name + (".gz" if gz else ""))
        path.write_bytes(gzip.compress(data) if gz else data)

    labels = rng.integers(0, 10, 200)
    images = np.zeros((200, 28, 28), np.uint8)
    images[np.arange(200), 2 * labels, 3] = 255          # a learnable pattern
    write("train-images-idx3-ubyte", images[:150], gz=True)
    write("train-labels-idx1-ubyte", labels[:150], gz=False)
    write("t10k-images-idx3-ubyte", images[150:], gz=False)
    write("t10k-labels-idx1-ubyte", labels[150:], gz=True)
    mnist = load("mnist_mlp")
    x, y, xt, yt = mnist.load_mnist(tmp_path)
    assert x.shape == (150, 784) and xt.shape == (50, 784) and x.dtype == np.float32
    np.testing.assert_array_equal(y, labels[:150])
    assert x.max() == 1.0
    args = mnist.parse_args(["--data-dir", str(tmp_path), "--epochs", "15", "--batch-size",
                             "25", "--out", str(tmp_path), "--dropout", "0"])
    assert mnist.train(args, progress=False)["test_accuracy"] > 0.9
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(b"\x00\x00\x08\x01"
                                                                       b"\x00\x00\x00\x09x"))
    with pytest.raises(ValueError, match="header says"):
        mnist.load_mnist(tmp_path)


def test_cnn_digits_short_run():
    cnn = load("cnn_digits")
    result = cnn.train(cnn.parse_args(["--epochs", "3"]), progress=False)
    assert result["test_accuracy"] > 0.9
    assert result["losses"][-1] < result["losses"][0] / 4


def test_gpt_char_short_run_learns():
    """A few dozen steps of a smaller model: the loss falls from log(vocab) towards and
    below the unigram baseline, and sampling produces text."""
    gpt = load("gpt_char")
    args = gpt.parse_args(["--steps", "60", "--dim", "64", "--depth", "1", "--context", "32",
                           "--eval-batches", "2", "--sample-length", "10", "--lr", "1e-2"])
    result = gpt.train(args, progress=False)
    first = result["history"][0][1]
    assert abs(first - np.log(103)) < 0.3
    assert result["val_loss"] < result["unigram"] + 0.1
    assert len(result["sample"]) == len("The ") + 10


def test_gpt_char_bf16_step_runs():
    gpt = load("gpt_char")
    args = gpt.parse_args(["--steps", "3", "--dim", "32", "--depth", "1", "--context", "16",
                           "--eval-batches", "1", "--sample-length", "2", "--bf16"])
    result = gpt.train(args, progress=False)
    assert np.isfinite(result["val_loss"])


def test_quickstart_notebook_executes(monkeypatch):
    """Every code cell of examples/quickstart.ipynb runs, in order, in one namespace."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setattr(plt, "show", lambda *a, **k: None)
    notebook = json.loads((EXAMPLES / "quickstart.ipynb").read_text())
    assert notebook["nbformat"] == 4
    namespace = {"__name__": "__main__"}
    cells = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    assert len(cells) >= 8
    for i, cell in enumerate(cells):
        exec(compile("".join(cell["source"]), f"quickstart.ipynb[cell {i}]", "exec"),
             namespace)
    assert namespace["losses"][-1] < 0.05 < namespace["losses"][0]
    plt.close("all")
