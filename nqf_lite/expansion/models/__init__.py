"""One object per model: the architectures of the paper, one module per family
(§3, Table 3).

- :mod:`~nqf_lite.expansion.models.base`: :class:`Model`, :class:`Structure`,
  :data:`MODELS` (a
  :class:`Registry`: ``MODELS.make(name, **sizes)`` builds any model at other
  sizes), :func:`register`,
  :func:`as_weights`;
- :mod:`~nqf_lite.expansion.models.blocks`: activations, the neuron
  :class:`~.blocks.Layout`,
  :class:`~.blocks.SymmetricModule`, the feed-forward block form (Eqs. 17-19)
  and the batched torch :class:`~.blocks.Network` whose twin is its quadratic
  form;
- :mod:`~nqf_lite.expansion.models.mlp` (Prop. 1),
  :mod:`~nqf_lite.expansion.models.cnn` (Prop. 6),
  :mod:`~nqf_lite.expansion.models.attention` (Props. 2-4, its torch networks
  in :mod:`~nqf_lite.expansion.models.attention_networks`),
  :mod:`~nqf_lite.expansion.models.moe` (Prop. 5);
- every other module of this package is a family too: importing the package
  imports all of them, and each registers its models in :data:`MODELS`.

The public names of ``base``, ``blocks`` and the four families above are
re-exported here.
"""

from __future__ import annotations

import importlib
import pkgutil

from nqf_lite.expansion.models import attention, base, blocks, cnn, mlp, moe
from nqf_lite.expansion.models.attention import *  # noqa: F403
from nqf_lite.expansion.models.base import (
    MODELS,
    Model,
    Registry,
    Structure,
    as_weights,
    register,
)
from nqf_lite.expansion.models.blocks import *  # noqa: F403
from nqf_lite.expansion.models.cnn import *  # noqa: F403
from nqf_lite.expansion.models.mlp import *  # noqa: F403
from nqf_lite.expansion.models.moe import *  # noqa: F403

for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")

__all__ = [
    "MODELS",
    "Model",
    "Registry",
    "Structure",
    "as_weights",
    "register",
] + [
    name
    for family in (blocks, mlp, cnn, attention, moe)
    for name in family.__all__
]
