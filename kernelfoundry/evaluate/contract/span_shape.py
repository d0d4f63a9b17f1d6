"""A correctness shape where rows span several blocks, shaped by how the kernel tiles its grid.

The task's check shapes are small, so a kernel may be exact there only because each
row fits one block, and wrong at the target shape where rows span many blocks (a
loop that handles only the first block, a carry that is never added).  The span
shape gives every dimension the kernel loops over (a *loop* dimension) as much of
its target extent as a budget allows, never less than ``2 * B + 3`` (two full blocks
and a ragged tail, ``B`` the largest power of two among the config's values), every
dimension the grid tiles two full tiles and a ragged one, and every dimension with
one program per element three programs, so the run stays cheap in the interpreter.

Which dimension is which comes from dry runs of ``launch`` in the child
(:func:`run_checks.probe_grids`): programs at the largest check shape, and with each
symbol set to 1 (or the smallest size at which every launch has programs: a convolution's
window); the ratio is the number of programs along that dimension.  A dimension the probe
needed more than 1 for is *windowed* (:func:`windowed`): those keep ``2 * B + 3`` output
positions between them.  Values are kept odd so every tail is partial.  See docs/verifier.md.
"""

from __future__ import annotations

import math
from typing import Any

from ...task import Task

#: The span run's inputs hold at most this many elements in all (the judge generates them and runs
#: the reference on them) ...
ELEMENT_BUDGET = 1 << 20
#: ... and programs x blocks along its loop dimensions at most this many (the interpreter's cost).
TRIP_BUDGET = 128
DEFAULT_BLOCK = 256
#: Dimensions with one program per element get this many programs.
ROWS = 3
#: The grid-span shape's grid asks for about this many programs, and runs at most GRID_PROGRAMS_MAX.
GRID_PROGRAMS = 64
GRID_PROGRAMS_MAX = 4 * GRID_PROGRAMS


def block_size(config: dict[str, Any]) -> int:
    """The largest power-of-two int among a config's values (16..4096), or :data:`DEFAULT_BLOCK`."""
    found = [v for v in config.values() if isinstance(v, int) and not isinstance(v, bool)
             and v >= 16 and v & (v - 1) == 0]
    return min(4096, max(found)) if found else DEFAULT_BLOCK


def shape_symbols(task: Task) -> list[str]:
    """The symbols that size some input dimension, in first-use order."""
    seen: list[str] = []
    for spec in task.inputs:
        for dim in spec.shape:
            if isinstance(dim, str) and dim not in seen:
                seen.append(dim)
    return seen


def _elements(task: Task, env: dict[str, int]) -> int:
    return sum(math.prod(spec.concrete_shape(env)) for spec in task.inputs)


def _odd(v: int) -> int:
    return v if v % 2 or v <= 1 else v - 1


def launch_tiles(probe: dict[str, Any], symbols: list[str]) -> list[dict[str, float]] | None:
    """Per launch, elements per program along each symbol (``inf``: not a grid dimension of that
    launch), from a grid probe; None when the probe is unusable."""
    base, totals = probe.get("base") or {}, probe.get("programs")
    if not isinstance(totals, list) or not totals or not all(isinstance(p, int) and p > 0 for p in totals):
        return None
    out = []
    for i, total in enumerate(totals):
        tiles = {}
        for d in symbols:
            ones = (probe.get("ones") or {}).get(d)
            one = ones[i] if isinstance(ones, list) and len(ones) == len(totals) and isinstance(ones[i], int) \
                and ones[i] > 0 else None
            # a probe that failed tells nothing: take the dimension as one the kernel loops over, so the
            # span shape keeps it large (a kernel cannot shrink its span shape by refusing a probe)
            along = total / one if one else 1.0
            tiles[d] = math.inf if along < 1.5 else float(base.get(d, 1)) / along
        out.append(tiles)
    return out


def windowed(probe: dict[str, Any], grid: list[str]) -> dict[str, int]:
    """Grid dimensions whose probe worked only above size 1 (a convolution's or a pooling window's input
    extent: no output at 1), with the smallest size that worked.  At the check shapes one tile often
    covers such a dimension in the window's own launch (all positions of a small image), so it is tiled
    finely by the launches after it (one program per position) and not at all, as far as the check shapes
    show, by the window's launch: :func:`span_shape` gives those dimensions together at least
    ``2 * B + 3`` elements (:func:`windowed_floor`)."""
    at = probe.get("ones_at") or {}
    return {d: int(at[d]) for d in grid if isinstance(at.get(d), int) and at[d] > 1}


def windowed_floor(block: int, count: int) -> int:
    """Each of *count* windowed dimensions' least number of outputs: their product at least ``2 * block + 3``."""
    return math.ceil((2 * block + 3) ** (1.0 / count)) if count else 0


def _frame(task: Task, config: dict[str, Any], probe: dict[str, Any]):
    """What the span and long-row shapes start from: (symbols, per-launch tiles, the config's block,
    the largest target shape, grid dimensions, loop dimensions, the programs counter); None without
    symbols or targets.  An unusable probe counts every dimension as a loop dimension."""
    symbols = shape_symbols(task)
    if not symbols or not task.target_shapes:
        return None
    launches = launch_tiles(probe, symbols) or [{d: math.inf for d in symbols}]
    target = max(task.target_shapes, key=task.input_bytes)
    env = {k: int(v) for k, v in target.items()}
    grid = [d for d in symbols if any(not math.isinf(t[d]) for t in launches)]
    loops = [d for d in symbols if d not in grid]
    return symbols, launches, block_size(config), env, grid, loops, _counter(probe, grid, launches)


def _counter(probe: dict[str, Any], grid: list[str], launches: list[dict[str, float]]):
    """``programs(env)``: the programs the launches run at *env*, summed, scaled from the probe's own
    count at its base shape, so that what the grid does not tile along a symbol (a fixed batch folded
    into the programs, a halo) is counted too.  Without a count (an empty *probe*): only the programs
    the tiles along the grid dimensions account for."""
    base, totals = probe.get("base") or {}, probe.get("programs")
    usable = isinstance(totals, list) and len(totals) == len(launches) and \
        all(isinstance(p, int) and p > 0 for p in totals)

    def programs(env: dict[str, int]) -> float:
        out = 0.0
        for i, tiles in enumerate(launches):
            count = float(totals[i]) if usable else 1.0
            for d in grid:
                if not math.isinf(tiles[d]):
                    at_base = max(1, math.ceil(float(base.get(d, 1)) / tiles[d])) if usable else 1
                    count *= max(1, math.ceil(env[d] / tiles[d])) / at_base
            out += count
        return out
    return programs


def span_shape(task: Task, config: dict[str, Any], probe: dict[str, Any]) -> dict[str, int] | None:
    """The span shape for *config* given its grid *probe*; None when there is nothing to span (no
    symbolic dimension, or no shape larger than the check shapes).  An unusable probe counts every
    dimension as a loop dimension; a shape that stays over the budgets is still returned (the run's
    time limit then decides: the verifier fails closed)."""
    frame = _frame(task, config, probe)
    if frame is None:
        return None
    symbols, launches, block, env, grid, loops, programs = frame
    target = dict(env)
    for d in grid:                          # a few programs along a grid dimension, in its finest tiling
        t = min(tiles[d] for tiles in launches)
        env[d] = min(env[d], ROWS if t < 2 else 2 * math.ceil(t) + 3)
    window = windowed(probe, grid)          # and a window's input extent spans blocks in the window's launch
    # (``at - 1``: the input extent a window of that size needs beyond its outputs)
    least = {d: min(target[d], max(at + 1, windowed_floor(block, len(window)) + at - 1)) for d, at in window.items()}
    env.update({d: max(env[d], v) for d, v in least.items()})
    floor = {d: min(env[d], 2 * block + 3) for d in loops}
    tiled = _counter({}, grid, launches)          # only the programs the grid's tiles account for

    def over(values: dict[str, int], counted: bool) -> bool:
        blocks = math.prod(max(1.0, values[d] / block) for d in loops) if loops else 1.0
        grid_programs = (programs if counted else tiled)(values)
        return _elements(task, values) > ELEMENT_BUDGET or grid_programs * blocks > TRIP_BUDGET

    # Loop dimensions first, down to two blocks and a tail; then, when the grid is over the budget as the
    # probe counted it (a fixed batch folded into the programs), fewer programs along grid dimensions;
    # loop dimensions below two blocks only last, and only for the programs the grid's tiles account
    # for: a count the kernel inflates (padding programs) may cost it grid programs, never the rows
    # that span blocks, which are what the run is for.
    for dims, low, counted in ((loops, floor, False), (grid, {d: least.get(d, min(env[d], ROWS)) for d in grid}, True),
                               (loops, {d: min(env[d], ROWS) for d in loops}, False)):
        while over(env, counted):
            shrinkable = [d for d in dims if env[d] > low[d]]
            if not shrinkable:
                break
            d = max(shrinkable, key=lambda s: env[s])
            env[d] = max(low[d], env[d] // 2 + 1)
    return _finish(task, env, symbols, tuple(window))


def _finish(task: Task, env: dict[str, int], symbols: list[str], longer: tuple[str, ...] = ()) -> dict[str, int] | None:
    """*env* with odd sizes; None when it is a check shape, or no larger than one in elements unless one of
    the *longer* dimensions is longer than at every check shape (a window's positions spanning blocks)."""
    env = {d: _odd(v) if d in symbols else v for d, v in env.items()}
    if any(env == dict(c) for c in task.check_shapes):
        return None
    if any(env[d] > max(int(c.get(d, 0)) for c in task.check_shapes) for d in longer):
        return env
    if _elements(task, env) <= max((_elements(task, c) for c in task.check_shapes), default=0):
        return None
    return env


def grid_span_shape(task: Task, config: dict[str, Any], probe: dict[str, Any]) -> dict[str, int] | None:
    """A shape with many programs: grid dimensions as large as :data:`GRID_PROGRAMS` programs allow
    (up to their target extent), loop dimensions just past two blocks.  Kernels that change behaviour
    with the number of rows or tiles (a large-grid code path) run it here, where it is compared."""
    symbols = shape_symbols(task)
    launches = launch_tiles(probe, symbols)
    if not symbols or launches is None or not task.target_shapes:
        return None
    target = max(task.target_shapes, key=task.input_bytes)
    grid = [d for d in symbols if any(not math.isinf(t[d]) for t in launches)]
    if not grid:
        return None
    block = block_size(config)
    env = {k: int(v) for k, v in target.items()}
    per_dim = max(2, int(GRID_PROGRAMS ** (1.0 / len(grid))))
    for d in symbols:
        if d in grid:
            t = min(tiles[d] for tiles in launches)
            env[d] = min(env[d], max(1, int(per_dim * t)) + (1 if t >= 2 else 0))
        else:
            env[d] = min(env[d], 2 * block + 3)
    for d, at in windowed(probe, grid).items():
        env[d] = min(int(target[d]), max(env[d], at + 1))
    loops = [d for d in symbols if d not in grid]
    while _elements(task, env) > ELEMENT_BUDGET and any(env[d] > ROWS for d in loops):
        d = max((d for d in loops if env[d] > ROWS), key=lambda s: env[s])
        env[d] = max(ROWS, env[d] // 2 + 1)
    # A fixed batch or a halo can multiply the programs far past GRID_PROGRAMS: fewer along the grid
    # dimensions, never so few that the shape is no larger than a check shape (a count the kernel
    # inflates must not make the run go away).
    programs = _counter(probe, grid, launches)
    largest_check = max((_elements(task, c) for c in task.check_shapes), default=0)
    low = {d: max(ROWS, at + 1) for d, at in windowed(probe, grid).items()}
    while programs(env) > GRID_PROGRAMS_MAX and any(env[d] > low.get(d, ROWS) for d in grid):
        d = max((d for d in grid if env[d] > low.get(d, ROWS)), key=lambda s: env[s])
        smaller = {**env, d: max(low.get(d, ROWS), env[d] // 2 + 1)}
        if _elements(task, smaller) <= largest_check:
            break
        env = smaller
    return _finish(task, env, symbols)


#: The long-row run's inputs hold at most this many elements in all ...
LONG_ELEMENT_BUDGET = 1 << 20
#: ... and programs x blocks along its loop dimensions at most this many (about 0.3 s in the interpreter).
LONG_TRIP_BUDGET = 256


def long_shape(task: Task, config: dict[str, Any], probe: dict[str, Any]) -> dict[str, int] | None:
    """The long-row shape for *config*: every loop dimension as close to its target extent as
    :data:`LONG_ELEMENT_BUDGET` and :data:`LONG_TRIP_BUDGET` allow, every grid dimension two programs
    (a full tile and a ragged one).  Few rows, as long as they can be: value-range behaviour that only
    shows on long rows (a max over the first 64K columns, a one-pass variance) is compared there.  None
    when no loop dimension would be longer than at every check shape.  An unusable probe counts every
    dimension as a loop dimension (the shape stays long: fail closed)."""
    frame = _frame(task, config, probe)
    if frame is None:
        return None
    symbols, launches, block, env, grid, loops, _ = frame
    target = dict(env)
    for d in grid:
        t = min(tiles[d] for tiles in launches)
        env[d] = min(env[d], 2 if t < 2 else math.ceil(t) + 1)
    for d, at in windowed(probe, grid).items():       # two outputs along a window's input extent
        env[d] = min(target[d], max(env[d], at + 1))
    # only the programs the grid's tiles account for: a count the kernel inflates (padding programs)
    # must not shorten the rows this shape is for
    programs = _counter({}, grid, launches)(env)

    # With grid dimensions known, the loop dimensions are one row walked in blocks (a LayerNorm's
    # F x D1 x D2).  With none (a one-program or failed probe: a GEMM whose check shapes fit one tile),
    # every dimension may be tiled by programs and grows the work in all of them: tiles along each, within
    # half the span shape's budget (a 971^3 GEMM under the long budget took 3.3 s in the interpreter).
    trips = LONG_TRIP_BUDGET if grid else TRIP_BUDGET // 2

    def over(values: dict[str, int]) -> bool:
        blocks = max(1.0, math.prod(values[d] for d in loops) / block) if grid else \
            math.prod(max(1.0, values[d] / block) for d in loops)
        return _elements(task, values) > LONG_ELEMENT_BUDGET or programs * blocks > trips

    while over(env) and any(env[d] > ROWS for d in loops):
        d = max((s for s in loops if env[s] > ROWS), key=lambda s: env[s])
        env[d] = max(ROWS, env[d] * 3 // 4)
    env = {d: _odd(v) if d in loops else v for d, v in env.items()}
    longest = {d: max((int(c.get(d, 0)) for c in task.check_shapes), default=0) for d in loops}
    if not any(env[d] > longest[d] for d in loops) or any(env == dict(c) for c in task.check_shapes):
        return None
    return env


def long_shapes(task: Task, config: dict[str, Any], probe: dict[str, Any]) -> list[dict[str, int]]:
    """The long-row shapes for *config*: :func:`long_shape`, and where the probe counts many programs
    but names no grid dimension (a grid the kernel pads to a fixed size hides which dimension holds
    the rows) one shape per dimension: that one as long as :data:`LONG_ELEMENT_BUDGET` and
    :data:`LONG_TRIP_BUDGET` allow, the others :data:`ROWS`."""
    first = long_shape(task, config, probe)
    shapes = [first] if first is not None else []
    frame = _frame(task, config, probe)
    if frame is None:
        return shapes
    symbols, _, block, target, grid, loops, _ = frame
    totals = probe.get("programs")
    many = isinstance(totals, list) and any(isinstance(p, int) and p > 1 for p in totals)
    if grid or len(loops) < 2 or not many:     # one program (a GEMM whose check shapes fit one tile): as before
        return shapes
    longest = {d: max((int(c.get(d, 0)) for c in task.check_shapes), default=0) for d in loops}
    for d in loops:
        env = {**target, **{o: min(target[o], ROWS) for o in loops if o != d}}
        while env[d] > ROWS and (_elements(task, env) > LONG_ELEMENT_BUDGET or env[d] / block > LONG_TRIP_BUDGET):
            env[d] = max(ROWS, env[d] * 3 // 4)
        env = {k: _odd(v) if k in loops else v for k, v in env.items()}
        if env[d] > longest[d] and env not in shapes and all(env != dict(c) for c in task.check_shapes):
            shapes.append(env)
    return shapes


#: The aligned shape makes each size a multiple of the target size's power-of-two factor, at most this.
ALIGN_MAX = 256


def aligned_shape(task: Task, target: dict[str, int]) -> dict[str, int] | None:
    """The smallest check shape with each size rounded up to a multiple of the largest power of two
    (at most :data:`ALIGN_MAX`) that divides the *target*'s size, within :data:`ELEMENT_BUDGET`
    (the largest alignments are halved first); None when no size changes.

    Check and span shapes are odd, so a switch taken only where a block size divides a size
    (``EVEN_K``: unmasked loads) never runs there; at this shape it runs as at the target."""
    symbols = shape_symbols(task)
    base = dict(min(task.check_shapes, key=lambda env: _elements(task, env)))
    align = {s: min(ALIGN_MAX, target[s] & -target[s]) for s in symbols
             if isinstance(target.get(s), int) and target[s] > 0}

    def shape() -> dict[str, int]:
        return {d: min(-(-v // align[d]) * align[d], max(target[d], align[d])) if d in align else v
                for d, v in base.items()}

    env = shape()
    while _elements(task, env) > ELEMENT_BUDGET and any(a > 1 for a in align.values()):
        widest = max(align, key=lambda d: (env[d], align[d]))
        if align[widest] == 1:
            widest = max(align, key=lambda d: align[d])
        align[widest] //= 2
        env = shape()
    if env == base or any(env == dict(c) for c in task.check_shapes) or _elements(task, env) > ELEMENT_BUDGET:
        return None
    return env
