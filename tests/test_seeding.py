"""The book-wide seed: NQF_SEED drives every stream, names separate them."""

import numpy as np
import pytest

from nqf_lite.book import seeding


def test_default_base_seed_is_zero(monkeypatch):
    monkeypatch.delenv("NQF_SEED", raising=False)
    assert seeding.base_seed() == 0


def test_base_seed_changes_every_stream(monkeypatch):
    monkeypatch.setenv("NQF_SEED", "0")
    a = seeding.rng("ch1", "w").standard_normal(4)
    a_again = seeding.rng("ch1", "w").standard_normal(4)
    other_name = seeding.rng("ch1", "x").standard_normal(4)
    monkeypatch.setenv("NQF_SEED", "1")
    b = seeding.rng("ch1", "w").standard_normal(4)
    np.testing.assert_array_equal(a, a_again)
    assert not np.allclose(a, b)
    assert not np.allclose(a, other_name)


def test_torch_generator_follows_base_seed(monkeypatch):
    import torch

    monkeypatch.setenv("NQF_SEED", "3")
    t1 = torch.randn(3, generator=seeding.torch_generator("k"))
    t2 = torch.randn(3, generator=seeding.torch_generator("k"))
    monkeypatch.setenv("NQF_SEED", "4")
    t3 = torch.randn(3, generator=seeding.torch_generator("k"))
    assert torch.equal(t1, t2) and not torch.equal(t1, t3)


def test_seeds_are_distinct_and_in_range(monkeypatch):
    monkeypatch.setenv("NQF_SEED", "0")
    s = seeding.seeds(50, "ens")
    assert len(set(s)) == 50 and all(0 <= v < 2**63 for v in s)
    assert s[:3] == seeding.seeds(3, "ens")


@pytest.mark.parametrize("raw", ["-1", "abc", "1.5"])
def test_bad_env_is_refused(monkeypatch, raw):
    monkeypatch.setenv("NQF_SEED", raw)
    with pytest.raises(ValueError, match="NQF_SEED"):
        seeding.base_seed()


@pytest.mark.parametrize("keys", [(1.5,), (None,), (True,), (-2,)])
def test_bad_keys_are_refused(keys):
    with pytest.raises((TypeError, ValueError), match="keys"):
        seeding.seed_of(*keys)


@pytest.mark.parametrize("n", [0, -1, 2.0, True])
def test_bad_ensemble_size(n):
    with pytest.raises((TypeError, ValueError), match="n must"):
        seeding.seeds(n, "x")
