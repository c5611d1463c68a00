"""One book-wide seed: every random draw of every chapter derives from
``NQF_SEED``.

A chapter never writes a literal seed.  It asks this module for a generator
named after what it draws (``rng("ch4", "weights")``), and the generator is
derived from the base seed (the environment variable ``NQF_SEED``, default 0)
and that name through :class:`numpy.random.SeedSequence`.  Two names give
independent streams; the same name and base seed give the same stream, so a
chapter is reproducible, and re-running it with another base seed redraws
everything at once::

    NQF_SEED=7 jupyter nbconvert --execute notebooks/04_closure.ipynb

Ensembles take ``seeds(n, ...)``: ``n`` integer seeds, one per member, each
again derived from the base seed.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import torch

__all__ = [
    "SEED_ENV",
    "base_seed",
    "rng",
    "seed_of",
    "seeds",
    "torch_generator",
]

SEED_ENV = "NQF_SEED"


def base_seed() -> int:
    """Return the book-wide base seed, read from ``NQF_SEED`` (default 0).

    Raises
    ------
    ValueError
        If ``NQF_SEED`` is set but is not a non-negative integer.
    """
    raw = os.environ.get(SEED_ENV, "0").strip() or "0"
    try:
        value = int(raw)
    except ValueError as exc:
        raise ValueError(
            f"{SEED_ENV} must be a non-negative integer, got {raw!r}"
        ) from exc
    if value < 0:
        raise ValueError(
            f"{SEED_ENV} must be a non-negative integer, got {raw!r}"
        )
    return value


def _key_words(keys: tuple[object, ...]) -> list[int]:
    words = []
    for key in keys:
        if isinstance(key, bool) or not isinstance(
            key, (str, int, np.integer)
        ):
            raise TypeError(f"keys must be strings or integers, got {key!r}")
        if isinstance(key, (int, np.integer)):
            if key < 0:
                raise ValueError(f"integer keys must be >= 0, got {key!r}")
            words.append(int(key))
        else:
            digest = hashlib.sha256(key.encode("utf-8")).digest()
            words.append(int.from_bytes(digest[:8], "little"))
    return words


def seed_of(*keys: str | int) -> int:
    """Return a 63-bit integer seed derived from the base seed and ``keys``.

    Parameters
    ----------
    *keys : str or int
        Names of the draw (e.g. ``"ch3", "teacher", 2``).  Different keys give
        independent seeds; the base seed enters every one of them.

    Returns
    -------
    int
        A seed in ``[0, 2**63)``, usable by numpy, torch and ``nqf_lite``.
    """
    seq = np.random.SeedSequence([base_seed(), *_key_words(keys)])
    return (
        int(
            seq.generate_state(2, dtype=np.uint32).astype(np.uint64)
            @ np.array([1, 2**32], np.uint64)
        )
        >> 1
    )


def rng(*keys: str | int) -> np.random.Generator:
    """Return a numpy ``Generator`` for the draw named by ``keys`` (see
    :func:`seed_of`)."""
    return np.random.default_rng(seed_of(*keys))


def torch_generator(*keys: str | int) -> torch.Generator:
    """Return a CPU ``torch.Generator`` for the draw named by ``keys`` (see
    :func:`seed_of`)."""
    gen = torch.Generator()
    gen.manual_seed(seed_of(*keys))
    return gen


def seeds(n: int, *keys: str | int) -> list[int]:
    """Return ``n`` independent seeds for the members of an ensemble named
    ``keys``.

    Parameters
    ----------
    n : int
        Ensemble size, at least 1.
    *keys : str or int
        Name of the ensemble; member ``j`` gets ``seed_of(*keys, j)``.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an integer, got {n!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return [seed_of(*keys, j) for j in range(int(n))]
