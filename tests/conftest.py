import numpy as np
import pytest
import torch

torch.set_default_dtype(torch.float64)


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
