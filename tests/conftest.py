"""Suite-wide settings: every traced jaxpr is type-checked, every batching rule checked;
hypothesis profiles."""

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import mytorch as mt
from mytorch.core import staging
from mytorch.transforms import batching

staging.CHECK_EVERY_JAXPR = True
batching.CHECK_RULES = True  # every batching rule's output is checked against abstract eval

settings.register_profile(
    "default",
    max_examples=int(os.environ.get("MYTORCH_HYPOTHESIS_EXAMPLES", "25")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=os.environ.get("CI") == "true",
)
settings.register_profile("thorough", parent=settings.get_profile("default"), max_examples=300)
settings.load_profile(os.environ.get("MYTORCH_HYPOTHESIS_PROFILE", "default"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs CuPy and an NVIDIA GPU")


@pytest.fixture
def x64():
    """Run the test with 64-bit types enabled."""
    mt.config.update("enable_x64", True)
    try:
        yield
    finally:
        mt.config.update("enable_x64", False)


@pytest.fixture
def debug_nans():
    """Run the test with NaN checking on."""
    mt.config.update("debug_nans", True)
    try:
        yield
    finally:
        mt.config.update("debug_nans", False)


@pytest.fixture(autouse=True)
def _reset_config():
    yield
    mt.config.update("enable_x64", False)
    np.seterr(all="warn")
