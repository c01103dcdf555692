"""Weight matching (data-free, Git Re-Basin style): coordinate descent over the spec's spaces.

Each step re-solves one space with every other space held at its current element: a linear
assignment for permutations, Procrustes for orthogonal maps (fixing 1 on the residual), least
squares for invertible maps. Heads are matched as whole units first, by a cost that no
within-head map changes (QK/OV circuits or spectra); their per-head maps are then re-solved in
the new head order. Sweeps run in random order until the distance stops improving.

The residual starts from Procrustes (or assignment) on the boundary tensors only (token and
position embeddings, the head's rows, patch embedding): their rows correspond across models
without knowing any other space, unlike interior weights (the data-free trap: an interior row
corresponds only once every other space is known).

B under the transform so far lives in a `RunningModel`: a step touches only its space's tensors."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from functools import partial

import torch

from symalign.errors import SymalignError
from symalign.match.matchers import MatchInputs, MatchOutput
from symalign.match.results import SweepRecord
from symalign.match.solvers import permutation_matrices, solve
from symalign.match.weight.assignment import DeferredPermutations, Hint
from symalign.match.weight.running import RunningModel, squared_distance, squared_norm
from symalign.match.weight.units import head_cost, query_head_cost, reorder_whole_units, update_experts
from symalign.memory import LARGE_MODEL_PARAMETERS, heap_kept
from symalign.symmetry.groups import Permutation
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform

Tensors = dict[str, torch.Tensor]
Progress = Callable[[int, int], None]


def distance(a: Tensors, b: Tensors) -> float:
    """Relative distance ‖A − B‖ / ‖A‖ over all tensors."""
    num = sum(squared_distance(a[k], b[k]) for k in a)
    return (num / sum(squared_norm(t) for t in a.values())) ** 0.5


def boundary_tensors(model) -> list[str]:
    """Embedding and head tensors that touch the residual: rows that correspond across models."""
    return [n for n, tags in model.family.outer(model.config).items()
            if any(t and t.startswith("residual") for t in tags)]


def weight_match(a: Tensors, b: Tensors, spec: SymmetrySpec, classes: dict[str, str], boundary: list[str],
                 head_cost_kind: str = "circuit", max_sweeps: int = 30, seed: int = 0,
                 progress: Progress | None = None, tol: float = 1e-5,
                 max_seconds: float | None = None, device: torch.device | str | None = None,
                 init: Transform | None = None, fixed: frozenset[str] = frozenset(),
                 consume_b: bool = False,
                 on_sweep: Callable[[Transform], dict] | None = None,
                 precision: str | None = None,
                 inner_passes: int | None = None,
                 shared_qkv: bool = False) -> tuple[Transform, list[SweepRecord]]:
    """Transform T with T(B) ≈ A, and the per-sweep history (distance, seconds). The last entry
    says why it stopped (`stopped`: converged, sweep budget or time budget). Progress is reported
    per update unit (an MLP, a layer's attention), so a real-size model shows life within seconds.
    `device`: where the solves' matrix work runs (a GPU); the transform comes back on the CPU.
    `init`: elements to start from (e.g. permutations found on activations); spaces in `fixed` keep
    their `init` element and only the others are solved around them.
    `consume_b`: the dict `b` is handed over and comes back holding B under T (on the CPU): the working
    copy lets each of B's tensors go as it replaces it, so B never exists twice. That copy is T(B)
    applied step by step, rounded to the working precision after each step (float32 above
    LARGE_MODEL_PARAMETERS: T(B) to about 1e-6 relative, far below a bf16 checkpoint's rounding).
    `on_sweep(transform)`: before the first sweep and after each; its dict joins that history entry, off the clock.
    `precision`: float32 or float64 for the cost matmuls and steps (symalign.match.weight.running); None: by size.
    `inner_passes`: after each sweep, up to this many passes over the residual and attention with the MLPs
    held (`_inner_passes`; 0: off; None: by size, `default_inner_passes`).
    `shared_qkv`: one permutation per head for Q, K and V together (TransFusion's P_attn, Verma & Elbayad's
    P_MHA), solved on the sum of the QK and VO costs, in place of separate QK and VO permutations (a subgroup of
    theirs: it needs both classes `perm`)."""
    check_shared_qkv(spec, classes, shared_qkv)
    handed = b if consume_b else None
    if device is not None or consume_b:
        b = {k: (b.pop(k) if consume_b else b[k]).to(device or "cpu") for k in list(b)}
    if device is not None:
        a = {k: v.to(device) for k, v in a.items()}
    start = time.perf_counter()
    parameters = sum(t.numel() for t in a.values())
    mapped = RunningModel(a, b, spec, classes, consume_b=consume_b, compute=compute_dtype(precision, parameters))
    del b  # consumed: the working copy holds what is left of B
    inner_passes = default_inner_passes(parameters) if inner_passes is None else inner_passes
    transform, history = descend(mapped, classes, boundary, head_cost_kind, max_sweeps, seed, progress, tol,
                                 max_seconds, device, init, fixed, on_sweep, inner_passes, shared_qkv, start)
    if handed is not None:
        handed.update(mapped.take_aligned(transform))
    return transform.to("cpu"), [SweepRecord.from_json(h) for h in history]


def descend(mapped: RunningModel, classes: dict[str, str], boundary: list[str], head_cost_kind: str = "circuit",
            max_sweeps: int = 30, seed: int = 0, progress: Progress | None = None, tol: float = 1e-5,
            max_seconds: float | None = None, device: torch.device | str | None = None,
            init: Transform | None = None, fixed: frozenset[str] = frozenset(),
            on_sweep: Callable[[Transform], dict] | None = None, inner_passes: int = 0, shared_qkv: bool = False,
            start: float | None = None) -> tuple[Transform, list[dict]]:
    """Coordinate descent on B as `mapped` holds it (in memory, or read from its files: symalign.match.weight.
    streamed), from the residual's boundary start to convergence; weight_match's arguments, its history as dicts."""
    spec = mapped.spec_all
    rng = random.Random(seed)
    transform = Transform({k: v.to(device) if device is not None else v for k, v in (init or {}).items()})
    start = time.perf_counter() if start is None else start
    if transform:
        mapped.act(dict(transform))
    history = [{"sweep": 0, "distance": mapped.distance(transform), "seconds": 0.0}]

    def measured(entry: dict) -> dict:
        nonlocal start
        if on_sweep is not None:
            began = time.perf_counter()
            entry.update(on_sweep(transform))
            start += time.perf_counter() - began
        return entry

    measured(history[0])
    res_cls = classes.get("residual", "none")
    # the residual from the boundary tensors alone: their rows correspond across models
    if res_cls != "none" and "residual" not in transform:
        # in float64 whatever the precision: once per run, and a small model's few boundary tensors leave
        # C rank-deficient, where Procrustes' tie-break (1e-7 of C's norm) is below float32's round-off
        c = mapped.correlation("residual", None, names=boundary, dtype=torch.float64)
        transform["residual"] = solve(res_cls, mapped.a, mapped.touching("residual"), mapped.spec, "residual", c)
        mapped.act({"residual": transform["residual"]})
        history.append({"sweep": 0, "distance": mapped.distance(transform),
                        "seconds": time.perf_counter() - start, "step": "residual from boundary tensors"})
    measured(history[-1])
    units = [u for u in (tuple(s for s in unit if s not in fixed) for unit in _units(spec, classes)) if u]
    hints: dict[str, Hint] = {}  # warm starts of the permutation solves, sweep to sweep
    deferred = DeferredPermutations(mapped, transform, hints)
    try:
        with heap_kept(mapped.parameters):  # the sweeps make and free the same large shapes over and over
            stopped = _sweeps(mapped, transform, spec, classes, units, deferred, head_cost_kind, max_sweeps, tol,
                              rng, progress, measured, history, lambda: time.perf_counter() - start,
                              max_seconds, inner_passes, shared_qkv)
    finally:
        deferred.close()
    history[-1]["stopped"] = stopped
    if progress and units:
        progress(max_sweeps * len(units), max_sweeps * len(units))  # done early: the bar ends full
    return transform, history


def check_shared_qkv(spec: SymmetrySpec, classes: dict[str, str], shared_qkv: bool) -> None:
    """One line for a shared Q/K/V permutation the classes or the heads cannot take."""
    if shared_qkv and (classes.get("qk"), classes.get("vo")) != ("perm", "perm"):
        raise SymalignError("one permutation per head for Q, K and V (--shared-qkv) needs the qk and vo classes both "
                            f"perm; got qk {classes.get('qk', 'none')}, vo {classes.get('vo', 'none')}")
    if shared_qkv and any(_vo_of(n, spec) is None for n, sp in spec.spaces.items() if sp.kind == "qk"):
        raise SymalignError(f"one permutation per head for Q, K and V (--shared-qkv) needs a VO map beside each QK map "
                            f"in the same heads; {spec.family} pairs them otherwise (grouped query heads)")


def compute_dtype(precision: str | None, parameters: int) -> torch.dtype:
    """The precision of weight matching's big work. By default float32 at real scale, where it halves
    the cost matmuls' time and moves the distance and barrier in their last digits only
    (docs/benchmarks.md), and float64 below LARGE_MODEL_PARAMETERS, where it costs nothing."""
    if precision is None:
        precision = "float32" if parameters > LARGE_MODEL_PARAMETERS else "float64"
    return {"float32": torch.float32, "float64": torch.float64}[precision]


INNER_PASSES_AT_SCALE = 10


def default_inner_passes(parameters: int) -> int:
    """Inner passes by default: 10 at real scale, where the MLP permutations' cost products are most of a
    sweep and the passes take GPT-2-small from 15 sweeps to 6 (a sixth of the time off, a lower distance;
    docs/benchmarks.md); none below LARGE_MODEL_PARAMETERS, where a whole run takes a second and the
    zoo's published numbers are plain coordinate descent's (the passes land within its seed-to-seed spread)."""
    return INNER_PASSES_AT_SCALE if parameters > LARGE_MODEL_PARAMETERS else 0


def _sweeps(mapped: RunningModel, transform: Transform, spec: SymmetrySpec, classes: dict[str, str],
            units: list[tuple[str, ...]], deferred: DeferredPermutations, head_cost_kind: str, max_sweeps: int,
            tol: float, rng: random.Random, progress: Progress | None, measured, history: list[dict],
            elapsed: Callable[[], float], max_seconds: float | None, inner_passes: int = 0,
            shared_qkv: bool = False) -> str:
    """Sweep until converged or out of budget; returns why it stopped (the history grows per sweep)."""
    best = history[-1]["distance"]
    stopped = f"sweep budget ({max_sweeps} sweeps)"
    improvement = None
    for sweep in range(1, max_sweeps + 1):
        rng.shuffle(units)
        note = sweep_note(sweep, max_sweeps, improvement, tol)
        for k, unit in enumerate(units):
            _update_unit(unit, mapped, transform, spec, classes, deferred, head_cost_kind, shared_qkv)
            if progress:
                progress((sweep - 1) * len(units) + k + 1, max_sweeps * len(units), note)
        deferred.settle()
        # the bar shows life during the passes (GPT-2-small: about 3 s each)
        passed = partial(_tell_inner, progress, sweep * len(units), max_sweeps * len(units), note) if progress else None
        inner = _inner_passes(mapped, transform, spec, classes, units, deferred, head_cost_kind, inner_passes, tol,
                              passed, shared_qkv)
        current = mapped.distance(transform)
        improvement = (best - current) / best if best > 0 else 0.0
        history.append(measured({"sweep": sweep, "distance": current, "seconds": elapsed(),
                                 **({"inner_passes": inner} if inner else {})}))
        if current > best * (1 - tol):  # converged: less than `tol` relative improvement
            stopped = f"converged after {sweep} sweeps (relative improvement below {tol:g})"
            break
        best = current
        if max_seconds is not None and elapsed() >= max_seconds and sweep < max_sweeps:
            stopped = f"time budget ({max_seconds:g} s) after {sweep} sweeps"
            break
    return stopped


def _tell_inner(progress: Progress, at: int, total: int, note: str, done: int) -> None:
    progress(at, total, f"{note}; inner pass {done}")


HELD_KINDS = ("mlp", "experts")  # spaces the inner passes leave alone: their solves are the sweep's costly part
PAIRING_KINDS = ("heads",)  # whole-unit pairings the inner passes leave as the sweep set them


def inner_units(units: list[tuple[str, ...]], spec: SymmetrySpec) -> list[tuple[str, ...]]:
    """What an inner pass updates: the units with no MLP or expert space, less their whole-head pairings.
    The pairings are discrete, like the MLPs' permutations, and the sweep re-solves them; re-pairing in every
    pass cost a quarter of a GPT-2-small pass (the circuit products of every head pair) and reached a slightly
    higher distance than refining the rotations alone (docs/benchmarks.md, 2026-12-02)."""
    kept = [tuple(s for s in u if spec.spaces[s].kind not in PAIRING_KINDS) for u in units
            if not any(spec.spaces[s].kind in HELD_KINDS for s in u)]
    return [u for u in kept if u]


def _inner_passes(mapped: RunningModel, transform: Transform, spec: SymmetrySpec, classes: dict[str, str],
                  units: list[tuple[str, ...]], deferred: DeferredPermutations, head_cost_kind: str, passes: int,
                  tol: float, passed: Callable[[int], None] | None = None, shared_qkv: bool = False) -> int:
    """Up to `passes` passes over the residual and the maps inside attention heads, with the MLPs held (their
    tensors not read or moved: symalign.match.weight.lagging) and the head pairings kept, until a pass improves the
    distance by less than `tol`. Returns the passes run. Only for an orthogonal residual that is being solved
    beside other continuous maps (alone, its re-solve with all else held would give the same element)."""
    inner = inner_units(units, spec)
    if not passes or classes.get("residual") != "orthogonal" or ("residual",) not in inner or len(inner) < 2:
        return 0
    read = set().union(*(_reads(mapped, s) for u in inner for s in u if s != "residual"))
    mapped.hold("residual", mapped.touched("residual") - read)
    try:
        best = mapped.distance(transform)
        for done in range(1, passes + 1):
            for unit in inner:
                _update_unit(unit, mapped, transform, spec, classes, deferred, head_cost_kind, shared_qkv)
            current = mapped.distance(transform)
            if passed is not None:
                passed(done)
            if current > best * (1 - tol):
                return done
            best = current
        return passes
    finally:
        mapped.release()


def _update_unit(unit: tuple[str, ...], mapped: RunningModel, transform: Transform, spec: SymmetrySpec,
                 classes: dict[str, str], deferred: DeferredPermutations, head_cost_kind: str,
                 shared_qkv: bool = False) -> None:
    """Re-solve one update unit's spaces in turn, every other space held (with `shared_qkv`, a head's QK and VO
    spaces as one)."""
    for space in unit:
        deferred.settle(_reads(mapped, space))
        partner = _vo_of(space, spec) if shared_qkv else None
        if shared_qkv and spec.spaces[space].kind == "vo" and space.rsplit(".", 1)[0] + ".qk" in unit:
            continue  # moved with its QK space
        if partner is not None:
            deferred.settle(_reads(mapped, partner))
            _update_shared(space, partner, mapped, transform)
        elif spec.spaces[space].kind == "heads" and spec.spaces[space].batched_by is None:
            _update_heads(space, mapped, transform, head_cost_kind, classes.get("qk", "none"))
        elif spec.spaces[space].kind == "experts":
            update_experts(space, mapped, transform)
        else:
            _update_space(space, classes[spec.spaces[space].kind], mapped, transform, deferred)


def _vo_of(space: str, spec: SymmetrySpec) -> str | None:
    """The VO space of the same layer's heads when `space` is a QK space with one beside it."""
    if spec.spaces[space].kind != "qk":
        return None
    vo = space.rsplit(".", 1)[0] + ".vo"
    return vo if vo in spec.spaces and spec.spaces[vo].batched_by == spec.spaces[space].batched_by else None


def _update_shared(qk: str, vo: str, mapped: RunningModel, transform: Transform) -> None:
    """One permutation per head for Q, K and V: the assignment of the summed QK and VO costs, against B before
    the old element (both spaces hold the same one), applied to both."""
    old = transform.get(qk)
    c = mapped.correlation(qk, old) + mapped.correlation(vo, old)
    if old is not None:
        c = c @ old.dense().to(c.device)
    new = permutation_matrices(c)
    delta = new if old is None else new.compose(old.inverse())
    mapped.act({qk: delta, vo: delta})
    transform[qk] = transform[vo] = new


def _reads(mapped: RunningModel, space: str) -> set[str]:
    """The tensors a step on `space` reads: its own, and for whole heads those of the maps inside."""
    names = mapped.touched(space)
    for child in mapped.spec.batched_in(space):
        names |= mapped.touched(child.name)
    return names


def sweep_note(sweep: int, max_sweeps: int, improvement: float | None, tol: float) -> str:
    """What a progress bar says during a sweep: which one, and how far the last sweep's relative
    improvement is from the stopping threshold (the bar's total assumes every sweep is needed)."""
    last = "" if improvement is None else f", last improved {improvement:.1e} (stops below {tol:g})"
    return f"sweep {sweep} of at most {max_sweeps}{last}"


def _units(spec: SymmetrySpec, classes: dict[str, str]) -> list[tuple[str, ...]]:
    """Update units in the spec's declared order: each unbatched space with the spaces batched by it
    (a layer's heads, then the maps inside them), those of kind heads excepted (a head update
    solves them itself: grouped query heads). Only spaces whose kind has a class take part."""
    def chosen(space):
        return classes.get(space.kind, "none") != "none"

    units: list[tuple[str, ...]] = []
    for parent in spec.spaces.values():
        if parent.batched_by is not None:
            continue
        children = [s.name for s in spec.batched_in(parent.name) if s.kind != "heads" and chosen(s)]
        unit = ((parent.name,) if chosen(parent) else ()) + tuple(children)
        if unit:
            units.append(unit)
    return units


def _update_space(space: str, cls: str, mapped: RunningModel, transform: Transform,
                  deferred: DeferredPermutations | None = None) -> None:
    """Re-solve one space with every other one held; B moves by the change of its element only.

    Permutations are solved against B as it is (the assignment of a column-permuted cost is the
    column-permuted assignment), warm-started from the previous sweep's solve of the same space
    (symalign.match.weight.assignment: the identity is the guess) and, unbatched, solved beside the next
    steps (symalign.match.weight.assignment); orthogonal maps against B before their old element (C·G), so
    the Procrustes tie-break still leans towards the identity, not towards the old element."""
    old = transform.get(space)
    if (cls == "perm" and deferred is not None and mapped.spec.spaces[space].batched_by is None
            and (old is None or isinstance(old, Permutation))):
        deferred.submit(space, mapped.correlation(space, old, widen=False)[0])  # widened by the solver
        return
    if cls in ("perm", "orthogonal") and (old is None or isinstance(old, Permutation) or old.kind in ("orthogonal",
                                                                                                      "perm")):
        c = mapped.correlation(space, old)
        if old is not None and not isinstance(old, Permutation):
            c = c @ old.dense().to(c.device)
        new = solve(cls, mapped.a, mapped.touching(space), mapped.spec, space, c)
        if isinstance(old, Permutation):
            new, delta = new.compose(old), new
        else:
            delta = new if old is None else new.compose(old.inverse())
        mapped.act({space: delta})
    else:  # invertible, rescaled or scaled elements: undo the old one, then solve as if fresh
        before = mapped.touching(space) if old is None else mapped.act({space: old.inverse()})
        new = solve(cls, mapped.a, before, mapped.spec, space)
        mapped.act({space: new})
    transform[space] = new


def _update_heads(space: str, mapped: RunningModel, transform: Transform, head_cost_kind: str,
                  inner: str = "orthogonal") -> None:
    """Match whole heads by a cost no per-head map changes (reorder_whole_units), then grouped query
    heads inside each key/value head by their own circuits. `inner`: the class inside heads, which brute
    force aligns every head pair by (perm: by assignment; else rotations)."""
    layer = int(space.split(".")[1])
    current = reorder_whole_units(space, mapped, transform, lambda b: head_cost(
        mapped.a, b, layer, head_cost_kind, mapped.compute, inner))
    for query_heads in (s.name for s in mapped.spec.batched_in(space) if s.kind == "heads"):
        transform[query_heads] = permutation_matrices(query_head_cost(mapped.a, current, layer))
        mapped.act({query_heads: transform[query_heads]}, current)


def sweep_settings(config) -> dict:
    """weight_match's keyword arguments from an AlignConfig's options: the same sweeps whether weight
    matching is the method, a learned run's start or a universe's pairwise step."""
    return {"head_cost_kind": config.head_cost, "max_sweeps": config.max_sweeps, "seed": config.seed,
            "tol": config.option("min_improvement"), "precision": config.option("precision"),
            "inner_passes": config.option("inner_passes"), "shared_qkv": config.option("shared_qkv")}


def run_weight_matching(inputs: MatchInputs) -> MatchOutput:
    """The `weight` matcher (symalign.match.matchers). A real-size B that is handed over becomes
    aligned B in place (weight matching's working copy): one copy of B instead of two. The zoo's B is
    never consumed, so its aligned B is the transform applied once, exactly as it always was."""
    c = inputs.config
    points = c.option("barrier_per_sweep")
    consume = (inputs.own_b and not points
               and sum(t.numel() for t in inputs.b.tensors.values()) > LARGE_MODEL_PARAMETERS)
    order = list(inputs.b.tensors)
    transform, history = weight_match(inputs.a.tensors, inputs.b.tensors, inputs.spec, inputs.classes,
                                      boundary_tensors(inputs.a), **sweep_settings(c), progress=inputs.progress,
                                      max_seconds=c.max_seconds, device=inputs.device, consume_b=consume,
                                      fixed=inputs.frozen, on_sweep=sweep_barrier(inputs, points) if points else None)
    aligned = {k: inputs.b.tensors.pop(k) for k in order} if consume else None
    return MatchOutput(transform, sweeps=history, aligned=aligned)


def sweep_barrier(inputs: MatchInputs, points: int) -> Callable[[Transform], dict]:
    """The barrier between A and B under the transform so far (`barrier_per_sweep`): B transformed
    afresh each time, on the eval split of the run's data (else the pair's training data), at every
    example, so the last sweep's value is the run's `--barrier` at the same number of points."""
    from symalign.data import load_data
    from symalign.landscape.interpolation import interpolation_curve
    from symalign.models import transformed
    from symalign.models.io import default_data_spec

    data = load_data(inputs.config.data or default_data_spec(inputs.a))
    data.check_model(inputs.a)

    def measure(transform: Transform) -> dict:
        curve = interpolation_curve(inputs.a, transformed(inputs.b, transform.to("cpu")), data, points=points,
                                    device=inputs.device)
        return {"barrier": curve.barrier, "accuracy_barrier": curve.accuracy_barrier}

    return measure


LOOSE = 1e-3  # the minute-scale setting measured at GPT-2-small (3 sweeps there)
WORTH_SECONDS = 30.0  # below this the sweeps a looser rule skips are not worth a sentence


def looser_stop(sweeps: list[SweepRecord], tol: float) -> SweepRecord | None:
    """The sweep after which `--min-improvement tol` would have stopped this run (weight.py's rule: the
    first sweep improving the distance by less than `tol` of the sweep before), or None when no sweep
    before the last would have."""
    start = [s for s in sweeps if s.sweep == 0]
    runs = start[-1:] + [s for s in sweeps if s.sweep > 0]
    for before, after in zip(runs, runs[1:]):
        if after.distance > before.distance * (1 - tol):
            return after if after is not runs[-1] else None
    return None


def stop_hint(sweeps: list[SweepRecord], tol: float = LOOSE, worth_seconds: float = WORTH_SECONDS) -> str | None:
    """One sentence on the time a looser rule would save, when it would save at least `worth_seconds`."""
    hint = looser_stop(sweeps, tol)
    if hint is None or not sweeps:
        return None
    total, last = sweeps[-1].seconds, sweeps[-1].distance
    saved = total - hint.seconds
    if saved < worth_seconds:
        return None
    gap = 100 * (hint.distance - last) / last if last > 0 else 0.0
    later = sweeps[-1].sweep - hint.sweep
    return (f"sweep {hint.sweep} improved the distance by less than {tol:g}; the {later} sweep{'s' * (later > 1)} "
            f"after it took {saved:.0f} of {total:.0f} s: --min-improvement {tol:g} stops after sweep {hint.sweep} "
            f"(distance +{gap:.3f}%; on the zoo that moved the barrier by up to 11%: docs/benchmarks.md)")
