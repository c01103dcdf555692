"""Learned and soft matching's options (symalign.match.learned.optimisation), declared beside them: the optimiser's
budget and step, the stopping check, where learning starts, how λ is drawn. LearnedOptions is built
from these; the data's defaults (steps, input noise) come from symalign.data.defaults."""

from __future__ import annotations

from symalign.match.options import Option

LEARNERS = ("learned", "soft")
LAMBDA_SAMPLERS = ("uniform_mid", "half", "uniform", "normal")
LEARNED_STARTS = ("weight", "activation", "auto", "identity")
CHECK_POINTS = ("path", "midpoint")

LEARNED_OPTIONS: tuple[Option, ...] = (
    Option("steps", int, None, "learned/soft: most optimisation steps", LEARNERS, minimum=1, by_data=True),
    Option("lr", float, 0.01, "learned/soft: learning rate", LEARNERS, minimum=0),
    Option("batch_size", int, 64, "learned/soft: examples per step", LEARNERS, minimum=1),
    Option("input_noise", float, None, "learned/soft: std of Gaussian noise on training images, a regulariser",
           LEARNERS, minimum=0, by_data=True),
    Option("patience", int, 3, "learned/soft: checks (every --check-every steps) without improvement before stopping "
           "(a value above steps/check-every runs every step)", LEARNERS, minimum=1),
    Option("check_examples", int, None, "learned/soft: examples in the fixed check the stopping rule reads (at "
           "the start, every --check-every steps and at the last step); default: sized from --steps, 2 per step "
           "between 16 and 128 (at real scale full checks cost more than a short run's steps: GPT-2-small, 128 "
           "windows × 3 points ≈ 2 minutes on 2 CPU cores)", LEARNERS, minimum=1, auto=True),
    Option("check_every", int, None, "learned/soft: steps between checks (default: steps/4, between 5 and 25)",
           LEARNERS, minimum=1, auto=True),
    Option("check_points", str, None, "learned/soft: where the check measures the loss: path (λ = 0.25, 0.5, "
           "0.75; three or more models: the centroid and every edge midpoint) or midpoint (λ = 0.5, or the "
           "centroid: a third of the cost for a pair); default: path, midpoint below 50 steps", LEARNERS,
           CHECK_POINTS, auto=True),
    Option("round", bool, True, "soft: keep the doubly-stochastic maps to the end instead of rounding them to "
           "permutations half-way (Theus et al. App. C.2's trade-off): the run reports the soft path's midpoint "
           "loss and how far its endpoint moved from B beside the rounded result, which is what it writes",
           ("soft",)),
    Option("start", str, "weight", "learned (two models): where learning begins: weight matching's transform, "
           "permutations from activations with the rest solved around them, auto (both; the one whose path is "
           "lower on the check; docs/matching.md), or identity (B as it is: Theus et al.'s start ablation); soft "
           "matching starts from weight matching's or the identity", LEARNERS, LEARNED_STARTS),
    Option("lambdas", str, "uniform_mid", "learned/soft: the distribution of λ per step", LEARNERS, LAMBDA_SAMPLERS),
    Option("alpha", float, 1.0, "learned, three or more models: Dirichlet(α·1) mixing weights per step (1: uniform "
           "over the simplex; Theus et al. use 0.1)", LEARNERS, minimum=0, universe_only=True),
)
