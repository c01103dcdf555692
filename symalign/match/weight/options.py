"""Weight matching's options (symalign.match.weight.descent), declared beside it: how heads are compared, when the
sweeps stop, their precision, the barrier per sweep, and refinement rounds for three or more models."""

from __future__ import annotations

from symalign.match.options import Option

HEAD_COSTS = ("circuit", "spectral", "brute-force")
PRECISIONS = ("float32", "float64")
STREAM_CHOICES = ("auto", "always", "never")

WEIGHT_OPTIONS: tuple[Option, ...] = (
    Option("head_cost", str, "circuit", "weight: how two heads are compared: their QK/VO circuits (no map inside "
           "a head changes them), the spectra of q, k, v (TransFusion), or brute force (TransFusion's ablation: "
           "each head pair aligned inside first, by the QK/VO class, and scored by what that reaches)",
           ("weight",), HEAD_COSTS),
    Option("shared_qkv", bool, False, "weight: one permutation per head for Q, K and V together (TransFusion's "
           "P_attn; Verma & Elbayad's P_MHA, which their activation presets use), solved on the summed QK and VO "
           "costs, in place of separate QK and VO permutations; needs --qk perm and --vo perm", ("weight",)),
    Option("stream", str, "auto", "weight: read both checkpoints a tensor at a time from their safetensors files "
           "instead of loading them (memory bounded by a layer, not the model; aligned B written shard by shard): "
           "auto streams above 1B parameters, where loading both would take 12 bytes per parameter", ("weight",),
           STREAM_CHOICES),
    Option("max_sweeps", int, 30, "weight: at most this many sweeps", ("weight",), minimum=1),
    Option("max_seconds", float, None, "weight: stop after the sweep that passes this many seconds", ("weight",),
           minimum=0),
    Option("min_improvement", float, 1e-5, "weight: stop when a sweep shrinks the distance ‖A − T(B)‖/‖A‖ by less "
           "than this fraction of it", ("weight",), minimum=0),
    Option("inner_passes", int, None, "weight: after each sweep, up to this many passes over the residual and the "
           "maps inside heads, with the MLPs held (their tensors neither read nor moved) and the head pairings "
           "kept, until one improves the distance by less than --min-improvement: the residual's coupling to the "
           "heads converges between the MLP permutations' costly solves (0: off); default: 10 above 50M "
           "parameters, where it takes a GPT-2-small run from 15 sweeps to 6 and a sixth of its time off, 0 below "
           "(the zoo's published numbers)",
           ("weight",), minimum=0, auto=True),
    Option("precision", str, None, "weight: float32 or float64 for the cost matmuls and the steps (correlations "
           "are summed and solved in float64 either way); default: float32 above 50M parameters, where it halves "
           "the time, float64 below", ("weight",), PRECISIONS, auto=True),
    Option("barrier_per_sweep", int, 0, "weight: also measure the loss and accuracy barrier on this many λ points "
           "before the first sweep and after each one (0: off; e.g. 11), so one run gives the barrier-vs-iterations "
           "curve (Theus et al. Fig. 6); evaluates on the eval split of --data or the pair's training data",
           ("weight",), minimum=0),
    Option("rounds", int, 0, "weight, three or more models: refinement rounds, each model matched to the mean of "
           "the others", ("weight",), minimum=0, universe_only=True),
)
