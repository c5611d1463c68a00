"""Tested runners of the paper's experiments, used by chapters, tests and benchmarks.

- :mod:`~nqf_lite.experiments.train`: gradient descent on torch tensors
  (:func:`~nqf_lite.experiments.train.descend`), a network trained next to
  its twin, teacher tasks;
- :mod:`~nqf_lite.experiments.ensemble`: ensembles of networks trained at
  once (``vmap``).

This layer imports the library; the library never imports it.
"""
