"""A `dtype` fixture over given dtypes, with 64-bit types enabled for the 64-bit ones:
`dtype = dtype_fixture(np.complex64, np.complex128)` at module level in a test file."""

import numpy as np
import pytest

import mytorch as mt


def dtype_fixture(*dtypes):
    """A fixture named `dtype` that runs each test once per dtype (x64 on for float64 and
    complex128, restored after)."""

    @pytest.fixture(params=dtypes, name="dtype")
    def fixture(request):
        wide = np.dtype(request.param) in (np.float64, np.complex128)
        if wide:
            mt.config.update("enable_x64", True)
        try:
            yield request.param
        finally:
            if wide:
                mt.config.update("enable_x64", False)

    return fixture
