"""One object per model: the architectures of the paper, one module per family (§3, Table 3).

- :mod:`~nqf_lite.architectures.base`: :class:`Model`, :class:`Structure`, :data:`MODELS` (a
  :class:`Registry`: ``MODELS.make(name, **sizes)`` builds any model at other sizes), :func:`register`,
  :func:`as_weights`;
- :mod:`~nqf_lite.architectures.blocks`: activations, the neuron :class:`~.blocks.Layout`,
  :class:`~.blocks.SymmetricModule`, the feed-forward block form (Eqs. 17-19) and the
  batched torch :class:`~.blocks.Network` whose twin is its quadratic form;
- :mod:`~nqf_lite.architectures.mlp` (Prop. 1), :mod:`~nqf_lite.architectures.cnn` (Prop. 6),
  :mod:`~nqf_lite.architectures.attention` (Props. 2-4), :mod:`~nqf_lite.architectures.moe` (Prop. 5);
- every other module of this package is a family too: importing the package imports all
  of them, and each registers its models in :data:`MODELS`.

The public names of ``base``, ``blocks`` and the four families above are re-exported here.
"""

from __future__ import annotations

import importlib
import pkgutil

from . import attention, base, blocks, cnn, mlp, moe
from .attention import *  # noqa: F403
from .base import MODELS, Model, Registry, Structure, as_weights, register
from .blocks import *  # noqa: F403
from .cnn import *  # noqa: F403
from .mlp import *  # noqa: F403
from .moe import *  # noqa: F403

for _info in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["MODELS", "Model", "Registry", "Structure", "as_weights", "register"] + [
    name for family in (blocks, mlp, cnn, attention, moe) for name in family.__all__
]
