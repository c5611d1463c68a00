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
  once (``vmap``);
- :mod:`~nqf_lite.experiments.architectures`: chapter 2's truncation-error
  ensembles, the feed-forward invariance and ``feedforward_split`` (Thm 1,
  Prop. 2, Eqs. 17-19);
- :mod:`~nqf_lite.experiments.real_networks`: chapter 3's runners: twin
  checks, the Fig. 2 ensembles, online teachers (Fig. 6), the digits
  splits (Fig. 7);
- :mod:`~nqf_lite.experiments.power_laws`: the exact power-law theory of
  chapter 7 (Thms 9, 11; Eqs. 292-298): exponents of exact loss curves,
  Eq. 295's drift, the Fig. 5 comparisons of a network with its NQF;
- :mod:`~nqf_lite.experiments.power_law_networks`: chapter 7's networks:
  the one-hot and Fourier ensembles against the exact theory, the
  plain-MLP control, the NTK's drift with the width (Eq. 49, Fig. 5,
  Prop. 9);
- :mod:`~nqf_lite.experiments.deep_runs`: a tanh MLP next to its deep NQFs
  (the paper's Fig. 8), several models trained at once, their loss gaps
  (chapter 9);
- :mod:`~nqf_lite.experiments.deep_checks`: the live checks of Theorems 14
  and 15 on the MLP stack and on a general stack with g, B != 0, on
  well-conditioned runs (chapter 9);
- :mod:`~nqf_lite.experiments.attention_runs`: the attention half of the
  paper's Fig. 8 (chapter 9);
- :mod:`~nqf_lite.experiments.limits`: the runs of chapter 10 (where the
  theory stops): Theorem 13 against a hand expansion and Taylor's formula,
  the GELU teaser's plateaus, normalised layers, a tanh layer against its
  NQF across initial scales, GD vs Adam from W and WO, the Fourier MLP of
  the paper's Fig. 5;
- :mod:`~nqf_lite.experiments.sudden_learning`: the runs of chapter 6: the
  GLV flow in rescaled time, orthogonal (Thm 5), proportional (Thm 4) and
  isotropic (Thm 7) samples, GD on projector data (Thm 16), the linear
  network of Cor. 4;
- :mod:`~nqf_lite.experiments.atlas`: each model of Table 3 against its
  NQF, and staged learning predicted from A(x) (chapter 8);
- :mod:`~nqf_lite.experiments.design_runs`: forecasts tested by training
  (the MoE runs of chapter 11; the how-to's phase-retrieval run, closed
  switch-on and image data);
- :mod:`~nqf_lite.experiments.closure`: the runs of the closure chapter
  (a general NQF's task, the closed recursion against explicit layers,
  heavy-ball momentum against its closed recursion, twins under Adam and GD
  and their ensembles, the tangent kernel and its motion; Thm 2, Cor. 2,
  Props. 8-9);
- :mod:`~nqf_lite.experiments.compression`: the runs of the compression
  chapter (a layer and its twin, real tanh networks against their twins,
  the twins and Lipschitz constant of Corollary 3; Thm 3, Cor. 3, App. B.5).

This layer imports the library; the library never imports it.
"""
