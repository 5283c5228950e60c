"""Fixtures for the GPU backend's tests without a GPU: `twin` / `twin2` make the "gpu"
platform the CPU twin (generated CUDA kernels built by the host C++ compiler, NumPy buffers)
for one test and restore the probe after it. Nothing run on it stands for a GPU run."""

import pytest

from tests.twin_fixtures import twin_devices


@pytest.fixture
def twin(tmp_path_factory):
    """The twin's device 0 (a Device of platform "gpu" on the CPU twin)."""
    with twin_devices(1, tmp_path_factory.getbasetemp() / "twin") as devices:
        yield devices[0]


@pytest.fixture
def twin2(tmp_path_factory):
    """Two twin devices (pmap's replicas on threads, the thread communicator)."""
    with twin_devices(2, tmp_path_factory.getbasetemp() / "twin") as devices:
        yield devices
