"""The job pool: bounded, ordered, and independent of the number of
workers."""

import threading
import time

import numpy as np
import pytest

from nqf_lite.book import seeding
from nqf_lite.experiments import pool


def _draw(name, j, seed):
    """A job with random draws: its numbers come from its own seed."""
    return np.random.default_rng(seed).standard_normal(3).sum() + j


def _square(x):
    return x * x


def test_results_in_job_order_whatever_finishes_first():
    # the first job is the slowest: it finishes last, but comes back first
    def nap(delay, tag):
        time.sleep(delay)
        return tag

    jobs = {"slow": (0.3, "a"), "mid": (0.1, "b"), "fast": (0.0, "c")}
    out = pool.run_jobs(nap, jobs, workers=3)
    assert list(out) == ["slow", "mid", "fast"]
    assert list(out.values()) == ["a", "b", "c"]


@pytest.mark.parametrize("backend", ["thread", "process", "serial"])
def test_seeded_results_do_not_depend_on_workers(backend, monkeypatch):
    monkeypatch.setenv("NQF_SEED", "4")
    keys = [(name, j) for name in ("x", "y") for j in range(3)]
    one = pool.run_jobs(_draw, keys, workers=1, stream=("t", "pool"))
    many = pool.run_jobs(
        _draw, keys, workers=4, backend=backend, stream=("t", "pool")
    )
    assert list(one) == list(many) == keys
    assert one == many
    # each job's seed is the seeding stream named by its key
    for name, j in keys:
        seed = seeding.seeds(3, "t", "pool", name)[j]
        assert one[name, j] == _draw(name, j, seed)
    # distinct jobs, distinct draws; another base seed redraws them all
    assert len(set(one.values())) == len(keys)
    monkeypatch.setenv("NQF_SEED", "5")
    other = pool.run_jobs(_draw, keys, workers=2, stream=("t", "pool"))
    assert all(other[key] != one[key] for key in keys)


def test_workers_are_bounded():
    running, peak, lock = [0], [0], threading.Lock()

    def job(i):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.05)
        with lock:
            running[0] -= 1
        return i

    out = pool.run_jobs(job, range(8), workers=2)
    assert list(out.values()) == list(range(8))
    assert peak[0] == 2


def test_keys_unpack_and_mapping_args():
    assert pool.run_jobs(pow, [(2, 3), (3, 2)]) == {(2, 3): 8, (3, 2): 9}
    assert pool.run_jobs(_square, [3, 4], backend="serial") == {3: 9, 4: 16}
    assert pool.run_jobs(_square, {"a": (5,)}) == {"a": 25}


def test_a_failed_job_names_its_key():
    def job(x):
        if x == 2:
            raise ZeroDivisionError("boom")
        return x

    for workers in (1, 2):
        with pytest.raises(ZeroDivisionError) as err:
            pool.run_jobs(job, [1, 2, 3], workers=workers)
        assert any("2" in note for note in err.value.__notes__)


@pytest.mark.parametrize(
    "kwargs, exc, name",
    [
        ({"fn": 3, "jobs": [1]}, TypeError, "fn"),
        ({"fn": _square, "jobs": []}, ValueError, "jobs"),
        ({"fn": _square, "jobs": "ab"}, TypeError, "jobs"),
        ({"fn": _square, "jobs": [1, 1]}, ValueError, "jobs"),
        ({"fn": _square, "jobs": {"a": 1}}, TypeError, "jobs"),
        ({"fn": _square, "jobs": [[1]]}, TypeError, "jobs"),
        ({"fn": _square, "jobs": [1], "workers": 0}, ValueError, "workers"),
        ({"fn": _square, "jobs": [1], "workers": 1.5}, TypeError, "workers"),
        (
            {"fn": _square, "jobs": [1], "backend": "gpu"},
            ValueError,
            "backend",
        ),
        ({"fn": _square, "jobs": [1], "stream": "ch"}, TypeError, "stream"),
        (
            {"fn": _square, "jobs": [0.5], "stream": ("t",)},
            TypeError,
            "stream",
        ),
    ],
)
def test_bad_input_names_the_argument(kwargs, exc, name):
    with pytest.raises(exc, match=name):
        pool.run_jobs(**kwargs)


def test_job_seed_matches_seeding_streams():
    assert (
        pool.job_seed(("ch7", "ntk", "2-1"), 3)
        == seeding.seeds(5, "ch7", "ntk", "2-1")[3]
    )
    assert pool.job_seed(("a",), ("b", 1)) == seeding.seed_of("a", "b", 1)
    assert pool.available_workers() >= 1
