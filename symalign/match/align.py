"""One entry point for every matcher: align(A, B, config) -> Alignment.

Both models are brought to canonical form first (function-preserving), so every class the
spec admits is available and the barrier compares like with like. The result holds the group
elements, B re-expressed in A's basis (the same function as B) and a report."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from symalign.device import pick_device
from symalign.match.config import AlignConfig
from symalign.match.layers import frozen_spaces
from symalign.match.matchers import MatchInputs, MatchOutput, matcher
from symalign.match.results import MatchReport
from symalign.match.weight.descent import boundary_tensors, distance  # noqa: F401 (boundary_tensors: align's API)
from symalign.models import canonicalize, load_model, outputs, random_inputs, save_model, spec_of, transformed
from symalign.models.family import TransformerModel
from symalign.models.finite import FOLDED, require_finite
from symalign.models.widen import match_widths
from symalign.symmetry.transform import Transform, validate

Progress = Callable[[int, int], None]


@dataclass
class Alignment:
    transform: Transform
    aligned: TransformerModel
    report: MatchReport
    start: Transform | None = None  # learned / soft: the weight-matching transform they started from

    def save(self, out: str | Path) -> Path:
        """Hugging Face checkpoint of aligned B, transforms.safetensors (with the learned matcher's
        starting transform) and alignment.json."""
        out = save_model(self.aligned, out, self.report.config.get("dtype", "auto"))
        self.save_records(out)
        return out

    def save_records(self, out: Path) -> None:
        """transforms.safetensors and alignment.json beside an aligned B written already (in memory or streamed)."""
        self.transform.save(out / "transforms.safetensors", {"settings": json.dumps(self.report.config)},
                            start=self.start)
        (out / "alignment.json").write_text(json.dumps(self.report.to_json(), indent=2))


def align(model_a: TransformerModel | str | Path, model_b: TransformerModel | str | Path,
          config: AlignConfig | None = None, progress: Progress | None = None, consume_b: bool = False) -> Alignment:
    """B aligned to A by `config`'s matcher (None: weight matching of MLP units and heads). A model may be
    given as what `load_model` takes (a folder, zoo:RECIPE/SEED, a hub id). `consume_b`: the caller hands B
    over (holds it nowhere else), so B is emptied tensor by tensor as aligned B is built (a real checkpoint:
    4 bytes per parameter less at the end); a B this function canonicalised or embedded itself is always its own."""
    start = time.perf_counter()
    model_a, model_b = (load_model(m) if isinstance(m, (str, Path)) else m for m in (model_a, model_b))
    config = AlignConfig() if config is None else config
    sources = (model_a.source, model_b.source)
    for role, model in (("model A", model_a), ("model B", model_b)):
        require_finite(model, role)
    a, b, widths = match_widths(model_a, model_b)  # a narrower model is embedded in the wider one's basis
    del model_a  # a caller that handed them over (align_run) lets each raw model go once folded
    a = canonicalize(a)
    b = canonicalize(b)
    for role, model in (("model A", a), ("model B", b)):
        require_finite(model, role, FOLDED)
    own_b = consume_b or b is not model_b  # a new object: only its tensors may be shared, never its dict
    del model_b
    spec = spec_of(b)
    # What the report compares with B, taken now: B itself can then be freed as soon as it is transformed.
    gap_inputs = random_inputs(b)
    b_logits = outputs(b, gap_inputs)
    distance_before = distance(a.tensors, b.tensors)
    config = config.for_spec(spec)
    device = pick_device(config.device)
    active = {k: c for k, c in config.classes.items() if c != "none"}
    frozen = frozen_spaces(spec, config.layers)
    if active:
        output = matcher(config.method).runner()(MatchInputs(a, b, spec, active, config, device, progress, own_b,
                                                             frozen))
    else:  # nothing to match: the identity, whatever the method
        output = MatchOutput(Transform())
    if frozen and output.aligned is None:  # a matcher that solves spaces one by one may not know `frozen`
        output.transform = Transform({k: v for k, v in output.transform.items() if k not in frozen})
    transform = output.transform
    if output.aligned is not None:  # the matcher built aligned B in B's own memory (weight matching at real scale)
        validate(transform, spec)
        aligned = b.with_tensors(output.aligned)
    else:
        aligned = transformed(b, transform, consume=own_b)
    del b
    report = MatchReport(sources[0], sources[1], config.to_json(), distance_before,
                         distance_after=distance(a.tensors, aligned.tensors),
                         function_gap_vs_b=float((outputs(aligned, gap_inputs) - b_logits).abs().max()),
                         seconds=time.perf_counter() - start, sweeps=output.sweeps, learned=output.learned,
                         learned_summary=output.learned_summary, widths=widths or None)
    return Alignment(transform, aligned, report, output.start)
