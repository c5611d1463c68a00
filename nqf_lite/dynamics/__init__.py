"""The dynamics and the solvable cases (Theorems 2-7 and 16, Section 6).

- :mod:`~nqf_lite.dynamics.training`: gradient descent on ``W`` and the
  closed dynamics on ``(M, μ)`` (Theorem 2, Eqs. 21-24);
- :mod:`~nqf_lite.dynamics.compression`: the width-(k_V + 1) twin
  (Theorem 3);
- :mod:`~nqf_lite.dynamics.momentum`: heavy-ball and Adam on the order
  parameters;
- :mod:`~nqf_lite.dynamics.projectors`: commuting data as projectors, the
  span of Theorem 16;
- :mod:`~nqf_lite.dynamics.solvable`: the exact solutions, generalized
  Lotka-Volterra, switch-on times (Theorems 4-7, 16); a package of
  ``glv``, ``switch_on``, ``integrators`` and ``samples`` that re-exports
  every name;
- :mod:`~nqf_lite.dynamics.scaling`: crowded switch-ons and power laws
  (Section 6), with the log-log slope fits of
  :mod:`~nqf_lite.dynamics.loglog`.

Import the modules themselves (``from nqf_lite.dynamics import solvable``);
the most used names are re-exported by :mod:`nqf_lite`.
"""
