"""Loss over a plane of parameter space: the picture in which straight and curved paths are drawn.

Two kinds, as the mode-connectivity papers draw them:
- through three points (Garipov et al. 2018, Fig. 1; Zhang et al.'s Fig. 2 with A, B and the aligned
  B'): an orthonormal basis of the plane through θ_A, θ_B, θ_C (u along B − A, v the rest of
  C − A), an affine grid extended beyond the triangle by a margin, and the paths drawn in it;
- around one model (Li et al. 2018): two random directions, filter-normalised (each output unit's
  slice scaled to the norm of the model's own, biases and norm gains left out), so the plane's
  scale means the same thing in every layer.

Each grid point is θ = θ_0 + x·u + y·v, built in float64 and evaluated with the simplex's
evaluator (one weightless module, parameters passed in)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

from symalign.errors import SymalignError
from symalign.landscape.curve import point_on
from symalign.landscape.evaluate import Evaluator
from symalign.models.family import Tensors, TransformerModel
from symalign.models.finite import require_finite

Progress = Callable[[int, int], None]


@dataclass
class Plane:
    kind: str  # "three points" or "random directions"
    xs: list[float]
    ys: list[float]
    loss: list[list[float]]  # [row y][column x]
    accuracy: list[list[float]]
    points: dict[str, dict]  # name -> {"x", "y", "loss", "accuracy"}: each point evaluated through the plane
    paths: dict[str, list[list[float]]] = field(default_factory=dict)  # name -> [[x, y], ...]
    examples: int = 0
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        out = asdict(self)
        out.update(out.pop("extra"))
        return out


def _dot(a: Tensors, b: Tensors) -> float:
    return sum(float((a[k] * b[k]).sum()) for k in a)


def _difference(a: Tensors, b: Tensors) -> Tensors:
    return {k: b[k].double() - a[k].double() for k in a}


class PlaneMap:
    """θ(x, y) = origin + x·u + y·v in float64, and the coordinates of any point projected onto it."""

    def __init__(self, origin: TransformerModel, u: Tensors, v: Tensors):
        self.origin = origin
        self.base = {k: t.double() for k, t in origin.tensors.items()}
        self.u, self.v = u, v

    def at(self, x: float, y: float) -> TransformerModel:
        if x == 0.0 and y == 0.0:
            return self.origin
        dtype = next(iter(self.origin.tensors.values())).dtype
        return self.origin.with_tensors({k: (t + x * self.u[k] + y * self.v[k]).to(dtype)
                                         for k, t in self.base.items()})

    def coordinates(self, tensors: Tensors) -> tuple[float, float, float]:
        """(x, y, distance off the plane) of a parameter point."""
        d = _difference(self.base, tensors)
        x, y = _dot(d, self.u), _dot(d, self.v)
        off = math.sqrt(max(_dot(d, d) - x * x - y * y, 0.0))
        return x, y, off


def three_point_map(a: TransformerModel, b: TransformerModel, c: TransformerModel) -> PlaneMap:
    """The orthonormal basis of the plane through A, B and C (Gram–Schmidt: u ∥ B − A)."""
    ab, ac = _difference(a.tensors, b.tensors), _difference(a.tensors, c.tensors)
    norm_ab = math.sqrt(_dot(ab, ab))
    if norm_ab == 0:
        raise SymalignError("A and B are the same point: they span no plane")
    u = {k: t / norm_ab for k, t in ab.items()}
    along = _dot(ac, u)
    rest = {k: ac[k] - along * u[k] for k in ac}
    norm_rest = math.sqrt(_dot(rest, rest))
    if norm_rest <= 1e-6 * norm_ab:  # within float32 rounding of the line (a midpoint stored in float32)
        raise SymalignError("C lies on the line through A and B: the three points span no plane")
    return PlaneMap(a, u, {k: t / norm_rest for k, t in rest.items()})


def filter_normalised_direction(model: TransformerModel, generator: torch.Generator) -> Tensors:
    """Li et al.'s direction: Gaussian, each filter (a slice along the first, output axis of a weight
    tensor) rescaled to the norm of the model's own filter; one-dimensional tensors (biases, norm
    gains) get no component."""
    out = {}
    for k, t in model.tensors.items():
        t = t.double()
        if t.dim() < 2:
            out[k] = torch.zeros_like(t)
            continue
        d = torch.randn(t.shape, generator=generator, dtype=torch.float64)
        rows, own = d.reshape(t.shape[0], -1), t.reshape(t.shape[0], -1)
        scale = own.norm(dim=1, keepdim=True) / rows.norm(dim=1, keepdim=True).clamp_min(1e-30)
        out[k] = (rows * scale).reshape(t.shape)
    return out


def random_map(model: TransformerModel, seed: int = 0) -> PlaneMap:
    """Two filter-normalised random directions around `model` (not orthogonalised, as Li et al. draw
    them: at this dimension two Gaussian directions are nearly orthogonal anyway)."""
    g = torch.Generator().manual_seed(seed)
    return PlaneMap(model, filter_normalised_direction(model, g), filter_normalised_direction(model, g))


def grid_axis(values: list[float], margin: float, resolution: int) -> list[float]:
    """`resolution` evenly spaced values over the span of `values`, widened by `margin` of it each side."""
    lo, hi = min(values), max(values)
    pad = margin * (hi - lo)
    return [lo - pad + (hi - lo + 2 * pad) * i / (resolution - 1) for i in range(resolution)]


def plane_surface(plane: PlaneMap, data, xs: list[float], ys: list[float], points: dict[str, tuple[float, float]],
                  max_examples: int | None = None, device: str | torch.device = "cpu",
                  progress: Progress | None = None, kind: str = "three points") -> Plane:
    """Loss and accuracy on the grid xs × ys and at each named point's coordinates."""
    evaluator = Evaluator(plane.origin, data, max_examples, device)
    total, done = len(xs) * len(ys) + len(points), [0]

    def measure(x: float, y: float) -> tuple[float, float]:
        m = evaluator(evaluator.hf_params(plane.at(x, y)))
        done[0] += 1
        if progress:
            progress(done[0], total)
        return m.loss, m.accuracy

    marked = {}
    for name, (x, y) in points.items():
        loss, acc = measure(x, y)
        marked[name] = {"x": x, "y": y, "loss": loss, "accuracy": acc}
    loss_rows, acc_rows = [], []
    for y in ys:
        row = [measure(x, y) for x in xs]
        loss_rows.append([r[0] for r in row])
        acc_rows.append([r[1] for r in row])
    return Plane(kind, xs, ys, loss_rows, acc_rows, marked, examples=evaluator.examples)


def three_point_plane(a: TransformerModel, b: TransformerModel, c: TransformerModel, data, resolution: int = 21,
                      margin: float = 0.2, names: tuple[str, str, str] = ("A", "B", "C"),
                      max_examples: int | None = None, device: str | torch.device = "cpu",
                      progress: Progress | None = None, line_to_c: bool = True) -> tuple[Plane, PlaneMap]:
    """The plane through three points (all in one parametrisation), its grid extended by `margin`,
    with the straight lines A → B and (`line_to_c`: C is a model, not a curve's bend) A → C drawn in it."""
    if resolution < 2:
        raise SymalignError(f"--resolution must be at least 2; got {resolution}")
    if not margin >= 0:
        raise SymalignError(f"--margin must be 0 or more; got {margin}")
    for name, model in zip(names, (a, b, c)):
        require_finite(model, name)
    plane = three_point_map(a, b, c)
    coords = {names[0]: (0.0, 0.0), names[1]: plane.coordinates(b.tensors)[:2],
              names[2]: plane.coordinates(c.tensors)[:2]}
    xs = grid_axis([p[0] for p in coords.values()], margin, resolution)
    ys = grid_axis([p[1] for p in coords.values()], margin, resolution)
    surface = plane_surface(plane, data, xs, ys, coords, max_examples, device, progress)
    surface.paths[f"{names[0]} → {names[1]} (straight)"] = [list(coords[names[0]]), list(coords[names[1]])]
    if line_to_c:
        surface.paths[f"{names[0]} → {names[2]} (straight)"] = [list(coords[names[0]]), list(coords[names[2]])]
    return surface, plane


def random_plane(model: TransformerModel, data, resolution: int = 21, span: float = 1.0, seed: int = 0,
                 max_examples: int | None = None, device: str | torch.device = "cpu",
                 progress: Progress | None = None, name: str = "A") -> Plane:
    """Li et al.'s filter-normalised random plane around one model, x and y in [−span, span]."""
    if resolution < 2:
        raise SymalignError(f"--resolution must be at least 2; got {resolution}")
    if not span > 0:
        raise SymalignError(f"--span must be positive; got {span}")
    require_finite(model, name)
    axis = [-span + 2 * span * i / (resolution - 1) for i in range(resolution)]
    surface = plane_surface(random_map(model, seed), data, axis, axis, {name: (0.0, 0.0)}, max_examples, device,
                            progress, kind="random directions")
    surface.extra.update({"seed": seed, "span": span})
    return surface


def curve_path(plane: PlaneMap, bend: str, a: Tensors, control: Tensors, b: Tensors,
               points: int = 41) -> tuple[list[list[float]], float]:
    """A curve's points in the plane's coordinates, and how far the curve leaves the plane at most
    (0 when the plane is the one through A, B and the curve's bend)."""
    path, off = [], 0.0
    for i in range(points):
        x, y, d = plane.coordinates(point_on(bend, a, control, b, i / (points - 1)))
        path.append([x, y])
        off = max(off, d)
    return path, off
