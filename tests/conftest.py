import numpy as np
import pytest
import torch
from hypothesis import settings

torch.set_default_dtype(torch.float64)

# Property tests are reproducible: the same examples on every run and machine,
# no example database.
settings.register_profile(
    "book", derandomize=True, database=None, deadline=None
)
settings.load_profile("book")


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
