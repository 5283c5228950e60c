"""`python -m benchmarks.gpu` without a GPU says why in one line and exits 0; its table code
and the mytorch training steps it times run (tiny sizes, on the CPU: a check of the code
path, not a measurement, and no GPU is involved)."""

import numpy as np

import mytorch as mt
from benchmarks import gpu, gpu_models


def test_without_a_gpu_prints_one_line_and_exits_0(monkeypatch, capsys):
    monkeypatch.setattr(gpu, "gpu_or_reason", lambda: "CuPy cannot reach a GPU: test")
    assert gpu.main([]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["benchmarks.gpu: no GPU, nothing measured (CuPy cannot reach a GPU: test)"]


def test_model_table_code_path_on_the_cpu(monkeypatch):
    monkeypatch.setattr(gpu, "synchronize", lambda: None)
    monkeypatch.setattr(gpu_models, "MLP_SIZES", [("tiny MLP", dict(dims=(8, 16, 3),
                                                                     batch=4))])
    monkeypatch.setattr(gpu_models, "GPT_SIZES", [("tiny GPT", dict(
        vocab=11, context=8, dim=16, heads=2, depth=1, batch=2))])
    for lib in ("_torch_device", "_jax_device"):  # mytorch alone: no other library runs
        monkeypatch.setattr(gpu_models, lib, lambda: "left out in this test")
    def measure(contenders, **settings):  # one sample each: the code path, not a timing
        return gpu.measure(contenders, calls=1, budget_s=0, min_rounds=1, warmup=1)

    text, missed, notes = gpu_models.model_rows(mt.devices("cpu")[0], ["mlp", "gpt"], True,
                                                measure)
    rows = text.splitlines()
    assert len(rows) == 4 and rows[2].startswith("| tiny MLP |") and missed == []
    first_losses = [float(r.split("mytorch ")[-1].split(" ")[0].rstrip(";|")) for r in rows[2:]]
    np.testing.assert_allclose(first_losses, [np.log(3), np.log(11)], rtol=0.2)
    assert notes == ["PyTorch: left out in this test", "JAX: left out in this test"]
