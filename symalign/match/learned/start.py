"""Where learned matching starts: weight matching (with a subgroup's closed form standing in for a
class whose own weight matching is a poor start), permutations found on activations with the
continuous maps solved by weight matching around them, or the identity (B as it is)."""

from __future__ import annotations

from dataclasses import replace

from symalign.match.matchers import MatchInputs, MatchOutput
from symalign.symmetry.spec import SymmetrySpec
from symalign.symmetry.transform import Transform


def identity_start(spec: SymmetrySpec, classes: dict[str, str]) -> Transform:
    """The identity element of every space a class is asked for, in that class's form, so learning
    has a latent for each: Theus et al.'s ablation of where learning starts (no matching first)."""
    import torch

    from symalign.symmetry.groups import Dense, Permutation, ScaledPermutation

    out = Transform()
    for space in spec.spaces.values():
        cls, n = classes.get(space.kind, "none"), space.size
        batch = space.count if space.count > 1 or space.batched_by else None
        if cls == "none":
            continue
        if cls == "perm" and batch is None:
            out[space.name] = Permutation(torch.arange(n))
        elif cls == "scaled_perm" and batch is None:
            out[space.name] = ScaledPermutation(torch.arange(n), torch.ones(n, dtype=torch.float64))
        else:
            eye = torch.eye(n, dtype=torch.float64)
            out[space.name] = Dense(eye.expand(batch, n, n).clone() if batch else eye,
                                    "invertible" if cls == "scaled_perm" else cls)
    return out


def activation_permutation_start(inputs: MatchInputs, data) -> MatchOutput | None:
    """A start whose MLP and head permutations come from activations (units paired by the
    correlation of what they compute, which no residual basis changes) and whose continuous maps
    are solved by weight matching around them. None when no permutation is asked for."""
    from symalign.match.activation.matching import activation_match
    from symalign.match.weight.descent import boundary_tensors, sweep_settings, weight_match

    c = inputs.config
    perms = {k: v for k, v in inputs.classes.items() if k in ("mlp", "heads") and v == "perm"}
    if not perms:
        return None
    init = activation_match(inputs.a, inputs.b, inputs.spec, perms, data, c.residual_strategy, c.head_strategy,
                            c.max_examples, device=inputs.device)
    init = Transform({n: el for n, el in init.items() if n not in inputs.frozen})  # `--layers`: identity there
    fixed = frozenset(n for n in init if inputs.spec.spaces[n].kind in ("mlp", "heads")) | inputs.frozen
    transform, sweeps = weight_match(inputs.a.tensors, inputs.b.tensors, inputs.spec, inputs.classes,
                                     boundary_tensors(inputs.a), **sweep_settings(c),
                                     device=inputs.device, init=init, fixed=fixed)
    return MatchOutput(transform, sweeps=sweeps)


# Where learning starts for a class whose own weight matching is a poor start: the closed form of a
# subgroup. Weight matching fits invertible head maps by least squares, which brings B's weights close
# to A's through ill-conditioned maps; learning from there ended at 0.048 on gpt2-prose, from the
# rotations (Procrustes) at 0.013 (docs/matching.md, issue #29). Learning then leaves the subgroup.
START_CLASSES = {"invertible": "orthogonal"}


def start_classes(classes: dict[str, str], spec: SymmetrySpec) -> dict[str, str]:
    """The classes of the matching learning starts from: each replaced by its START_CLASSES stand-in
    where every space of that kind admits it."""
    out = {}
    for kind, cls in classes.items():
        stand_in = START_CLASSES.get(cls)
        spaces = spec.spaces_of_kind(kind)
        out[kind] = stand_in if stand_in and spaces and all(s.admits(stand_in) for s in spaces) else cls
    return out


def start_inputs(inputs: MatchInputs) -> MatchInputs:
    """The inputs of the weight matching learning starts from (`start_classes`). It gets no progress
    of its own (it would reset the bar), and B is not handed to it: learning still reads B."""
    return replace(inputs, classes=start_classes(inputs.classes, inputs.spec), progress=None, own_b=False)
