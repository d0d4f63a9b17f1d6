"""Template lowerings beyond the seed generator's core ones: base aten op name -> ``lower(gen, i)``.

Each lowering gets the generator (:class:`.seedgen._Gen`) and the index of the node to lower;
it appends its kernel(s) and launch lines and records the node's value, as the core
lowerings do, or raises :class:`.seedgen.NoSeed` naming what it cannot express.
"""

from __future__ import annotations

from . import seed_attention, seed_conv, seed_misc, seed_pool

LOWERINGS = {**seed_conv.LOWERINGS, **seed_pool.LOWERINGS, **seed_attention.LOWERINGS, **seed_misc.LOWERINGS}
