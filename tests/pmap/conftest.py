import pytest

import mytorch as mt


@pytest.fixture(autouse=True)
def eight_devices():
    """Eight virtual CPU devices for every pmap test, restored afterwards."""
    before = mt.config.num_cpu_devices
    mt.config.update("num_cpu_devices", 8)
    yield mt.devices()
    mt.config.update("num_cpu_devices", before)
