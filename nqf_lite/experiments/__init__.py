"""Tested runners of the paper's experiments.

Used by the chapters, the tests and the benchmarks.

- :mod:`~nqf_lite.experiments.train`: gradient descent on torch tensors
  (:func:`~nqf_lite.experiments.train.descend`, ``descend_many``);
- :mod:`~nqf_lite.experiments.pair`: a network trained next to its twin;
- :mod:`~nqf_lite.experiments.teacher`: the teacher tasks of the paper's
  Fig. 2;
- :mod:`~nqf_lite.experiments.fourier`: the Fourier-feature and tanh runs of
  the paper's Fig. 5;
- :mod:`~nqf_lite.experiments.pool`: many runs in parallel, results in order
  (used by chapter 7);
- :mod:`~nqf_lite.experiments.ensemble`: ensembles of networks trained at
  once (``vmap``).

This layer imports the library; the library never imports it.
"""
