"""A bounded job pool for the runs of an experiment: many seeds, many
configurations, a few cores.

A chapter that trains an ensemble over several settings (the paper's Figure 5
over feature decays and amplitudes, App. C; the width scan of Proposition 9)
runs independent jobs. :func:`run_jobs` runs them in a bounded pool of threads
(numpy and torch release the GIL in their loops, so the cores work in
parallel) or processes, and returns the results

- in the order of the jobs, whatever order they finish in;
- independent of the number of workers: a job's random draws come from the
  book's seed streams (:mod:`nqf_lite.book.seeding`), named after the job's
  key, never from a generator shared by the pool, so one worker and eight
  give the same numbers.

Example
-------
>>> from nqf_lite.experiments.pool import run_jobs
>>> run_jobs(pow, [(2, 3), (3, 2)])
{(2, 3): 8, (3, 2): 9}
>>> import numpy as np
>>> def draw(name, seed):
...     return np.random.default_rng(seed).standard_normal()
>>> out = run_jobs(draw, ["a", "b"], stream=("doc", "draw"), workers=1)
>>> out == run_jobs(draw, ["a", "b"], stream=("doc", "draw"), workers=2)
True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import (
    Executor,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
)

from nqf_lite.book.seeding import seed_of

__all__ = ["BACKENDS", "available_workers", "job_seed", "run_jobs"]

#: how :func:`run_jobs` runs its jobs: in threads of this process, in worker
#: processes (``fn`` and its arguments must then pickle), or one after the
#: other in the calling thread
BACKENDS = ("thread", "process", "serial")


def available_workers() -> int:
    """Return the number of CPUs this process may use (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def _key_parts(key: object) -> tuple:
    return tuple(key) if isinstance(key, tuple) else (key,)


def job_seed(stream: Iterable[str | int], key: object) -> int:
    """Return the seed of the job ``key`` in the seed stream ``stream``.

    The seed is :func:`nqf_lite.book.seeding.seed_of` of the stream's names
    followed by the key's parts (a tuple key gives its items, any other key
    itself), so it depends on the base seed ``NQF_SEED``, the stream and the
    key only: not on the pool, its workers or the order the jobs run in.
    ``job_seed(("ch7", "ntk", "2-1"), 3)`` equals
    ``seeding.seeds(5, "ch7", "ntk", "2-1")[3]``.

    Raises
    ------
    TypeError
        If ``stream`` is not a tuple or list, or a name of ``stream`` or a
        part of ``key`` is not a string or a non-negative integer.
    """
    if not isinstance(stream, (tuple, list)):
        raise TypeError(
            f"stream must be a tuple of names (str or int), got {stream!r}"
        )
    parts = (*stream, *_key_parts(key))
    try:
        return seed_of(*parts)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"stream and job keys must consist of strings and non-negative "
            f"integers to name a seed, got stream {stream!r} and key "
            f"{key!r}"
        ) from exc


def _as_jobs(jobs: object) -> list[tuple[Hashable, tuple]]:
    """``[(key, args), ...]`` from a mapping key -> args or a list of keys."""
    if isinstance(jobs, Mapping):
        items = list(jobs.items())
        for key, args in items:
            if not isinstance(args, tuple):
                raise TypeError(
                    f"jobs must map each key to a tuple of arguments, got "
                    f"{args!r} for key {key!r}"
                )
    elif isinstance(jobs, Iterable) and not isinstance(jobs, (str, bytes)):
        items = [(key, _key_parts(key)) for key in jobs]
    else:
        raise TypeError(
            f"jobs must be a mapping key -> argument tuple or an iterable "
            f"of keys, got {jobs!r}"
        )
    if not items:
        raise ValueError("jobs must hold at least one job")
    keys = [key for key, _ in items]
    try:
        unique = len(set(keys)) == len(keys)
    except TypeError as exc:
        raise TypeError(f"jobs keys must be hashable, got {keys!r}") from exc
    if not unique:
        raise ValueError(f"jobs must not repeat a key, got {keys!r}")
    return items


def _n_workers(workers: object, n_jobs: int) -> int:
    if workers is None:
        return min(n_jobs, available_workers())
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(f"workers must be an integer or None, got {workers!r}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    return min(workers, n_jobs)


def run_jobs(
    fn: Callable[..., object],
    jobs: Mapping[Hashable, tuple] | Iterable[Hashable],
    *,
    workers: int | None = None,
    backend: str = "thread",
    stream: Iterable[str | int] | None = None,
) -> dict:
    """Run ``fn`` once per job in a bounded pool; results in the jobs' order.

    Parameters
    ----------
    fn : callable
        The job. Called as ``fn(*args)``, plus ``seed=job_seed(stream, key)``
        when ``stream`` is given.
    jobs : mapping or iterable
        Either a mapping ``key -> args`` (a tuple of positional arguments), or
        an iterable of keys, each its own arguments: a tuple key is unpacked
        (``fn(*key)``), any other key passed alone (``fn(key)``). Keys must be
        hashable and distinct. Jobs are started in this order (put the
        longest first to balance the workers).
    workers : int or None
        At most this many jobs run at once; default (None): the number of CPUs
        this process may use. Never more workers than jobs.
    backend : {"thread", "process", "serial"}
        Threads suit numpy and torch work (both release the GIL in their
        loops), but not code that keeps global state: ``torch.func``
        transforms (``jvp``, forward-mode AD), ``warnings.catch_warnings``;
        processes suit pure-Python work (``fn`` and the arguments must
        pickle); "serial" runs the jobs one after the other here.
    stream : tuple of str or int, optional
        A seed stream of :mod:`nqf_lite.book.seeding`: each job then receives
        its own seed, named by the stream and its key (:func:`job_seed`), so
        the results do not depend on ``workers`` or ``backend``.

    Returns
    -------
    dict
        ``{key: fn(...)}`` in the order of ``jobs``.

    Raises
    ------
    TypeError, ValueError
        On bad input, naming the argument (``fn``, ``jobs``, ``workers``,
        ``backend``, ``stream``).
    Exception
        The first failed job (in the jobs' order) re-raises its exception,
        with a note naming its key, after every job has finished.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    items = _as_jobs(jobs)
    n_workers = _n_workers(workers, len(items))
    extra = [{} for _ in items]
    if stream is not None:
        extra = [{"seed": job_seed(stream, key)} for key, _ in items]
    if backend == "serial" or n_workers == 1:
        outcomes = []
        for (key, args), kw in zip(items, extra):
            try:
                outcomes.append((True, fn(*args, **kw)))
            except Exception as exc:  # noqa: BLE001 - re-raised below
                outcomes.append((False, exc))
    else:
        pool_cls: type[Executor] = (
            ThreadPoolExecutor if backend == "thread" else ProcessPoolExecutor
        )
        with pool_cls(max_workers=n_workers) as pool:
            futures = [
                pool.submit(fn, *args, **kw)
                for (_, args), kw in zip(items, extra)
            ]
            outcomes = []
            for fut in futures:
                exc = fut.exception()
                outcomes.append(
                    (True, fut.result()) if exc is None else (False, exc)
                )
    results = {}
    for (key, _), (ok, value) in zip(items, outcomes):
        if not ok:
            value.add_note(f"in job {key!r} of run_jobs")
            raise value
        results[key] = value
    return results
