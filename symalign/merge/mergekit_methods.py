"""mergekit's merge methods as symalign merge rules: `symalign merge --how ties --base M ...`.

mergekit (arcee-ai, LGPL) is used as a library for what it does well: each rule hands the members,
already in one basis, to `mergekit.merge_methods.api.merge_state_dicts` as the Hugging Face state
dicts their checkpoints hold (not symalign's logical tensors: per-tensor methods such as SLERP and
TIES's magnitude trimming depend on how weights are grouped into tensors, so the same grouping as
`mergekit-yaml` reads keeps the hand-off exact; see `export_inputs`). Declared here without importing
mergekit, which is an optional dependency (`pip install -e ".[mergekit]"`)."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from symalign.errors import SymalignError
from symalign.merge.merge_rule import MergeInputs, MergeRule, install_hint, register

# name -> (label, base policy, parameters with symalign's defaults, at least this many models, help)
METHODS = {
    "linear": ("linear (mergekit)", "none", {"weight": 1.0}, 2,
               "weighted mean; weight: every model's weight (normalised)"),
    "slerp": ("SLERP (mergekit)", "first", {"t": 0.5}, 2,
              "spherical interpolation of two models per tensor; t: 0 gives the first, 1 the second"),
    "task_arithmetic": ("task arithmetic (mergekit)", "required", {"weight": 1.0, "lambda": 1.0}, 2,
                        "base + λ Σ weight·(model − base)"),
    "ties": ("TIES (mergekit)", "required", {"weight": 1.0, "density": 0.5}, 2,
             "task vectors trimmed to their largest `density` fraction, signs elected, then summed"),
    "dare_ties": ("DARE-TIES (mergekit)", "required", {"weight": 1.0, "density": 0.5}, 2,
                  "task vectors randomly dropped to `density` and rescaled (seeded), TIES sign election"),
    "dare_linear": ("DARE linear (mergekit)", "required", {"weight": 1.0, "density": 0.5}, 2,
                    "task vectors randomly dropped to `density` and rescaled (seeded), summed"),
    "model_stock": ("Model Stock (mergekit)", "required", {}, 3,
                    "the base moved towards the fine-tunes' average by their angle (a base and two or more models)"),
}


def _one_line(exc: BaseException) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):  # pydantic's validation error: the first complaint, briefly
        first = errors()[0]
        return f"{'.'.join(str(x) for x in first.get('loc', ()))}: {first.get('msg', exc)}"
    return " ".join(str(exc).split())


def combine(method: str, members: list, inputs: MergeInputs) -> dict:
    """Merge the members' state dicts with mergekit's `method`; the first member is the base when the
    rule has one. DARE's random drops follow `inputs.seed`."""
    try:
        from mergekit.merge_methods.api import merge_state_dicts
    except ImportError:
        raise SymalignError(f"--how {method} runs on mergekit, which is not installed: {install_hint('mergekit')}") \
            from None
    import torch

    family, config = members[0].family, members[0].config
    states = [{k: v.contiguous() for k, v in family.from_logical(m.tensors, config).items()} for m in members]
    torch.manual_seed(inputs.seed)
    try:
        with torch.no_grad():
            merged = merge_state_dicts(states, method, parameters=inputs.parameters,
                                       base=0 if inputs.has_base else None)
    except (ValueError, TypeError) as exc:  # mergekit's refusals of parameters and inputs (pydantic's included)
        raise SymalignError(f"--how {method}: {_one_line(exc)}") from None
    return family.to_logical({k: v.float() for k, v in merged.items()}, config)


def mergekit_config(method: str, inputs: list[Path], parameters: dict, has_base: bool, dtype: str = "float32") -> dict:
    """A `mergekit-yaml` configuration that merges these checkpoints as `combine` did (absolute paths,
    so mergekit reads them as local folders wherever it runs)."""
    paths = [str(Path(p).resolve()) for p in inputs]
    config = {"merge_method": method, "models": [{"model": p} for p in paths], "dtype": dtype, "out_dtype": dtype}
    if has_base:
        config["base_model"] = paths[0]
    if parameters:
        config["parameters"] = dict(parameters)
    return config


BOUNDS = {"t": (0.0, 1.0), "density": (1e-6, 1.0), "weight": (-1e6, 1e6), "lambda": (-1e6, 1e6)}
# linear normalises by the weights' sum: one weight for every model gives the plain mean for any positive value,
# and weight = 0 divides by zero (a merged model of NaNs)
RULE_BOUNDS = {"linear": {"weight": (1e-6, 1e6)}}

for _name, (_label, _base, _parameters, _min, _help) in METHODS.items():
    register(MergeRule(_name, _label, partial(combine, _name), min_models=_min, base=_base, parameters=_parameters,
                       requires="mergekit", help=_help,
                       bounds={k: BOUNDS[k] for k in _parameters} | RULE_BOUNDS.get(_name, {})))
