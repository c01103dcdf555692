"""Task loss and accuracy of a model family on a data source, for any parameter values.

One Hugging Face module is built per evaluator and reused through torch.func.functional_call,
so a 21-point interpolation curve never rebuilds a module or copies weights into one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.func import functional_call

from symalign.data import load_data
from symalign.data.base import IGNORE
from symalign.data.preprocess import image_config
from symalign.device import pick_device
from symalign.errors import SymalignError, require_at_least
from symalign.memory import LARGE_MODEL_PARAMETERS
from symalign.models.family import TransformerModel
from symalign.models.functional import functional_params, module_names, weightless_module


@dataclass(frozen=True)
class Metrics:
    loss: float
    accuracy: float
    examples: int
    # sequence classifiers only: the unweighted mean of the classes' F1 (what classification papers report
    # for unbalanced labels, e.g. Zhang et al.'s Emotion column)
    macro_f1: float | None = None


def batch_loss(logits: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Summed cross-entropy and number of correct predictions (next token, class, or masked token;
    targets of IGNORE (-100) are not scored: `scored` counts the rest)."""
    flat = logits.reshape(-1, logits.shape[-1]).float()
    y = targets.reshape(-1)
    return (torch.nn.functional.cross_entropy(flat, y, reduction="sum", ignore_index=IGNORE),
            ((flat.argmax(-1) == y) & (y != IGNORE)).sum())


ACTIVATION_BUDGET = 1 << 30  # bytes one forward and backward may keep for a micro-batch
LARGE_MODEL_ACTIVATION_BUDGET = 1 << 28  # the same above LARGE_MODEL_PARAMETERS, where memory is scarce


def activation_budget(template: TransformerModel, device: torch.device | str = "cpu") -> int:
    """Bytes a micro-batch's forward and backward may keep. On a GPU, a third of its free memory
    when asked (after the models moved there): a fixed CPU-sized budget would cut a GPT-2-small
    batch into one-window micro-batches and leave the GPU idle. On the CPU, whose memory the rest
    of the run shares, the fixed budgets."""
    device = torch.device(device)
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return free // 3
    size = sum(t.numel() for t in template.tensors.values())
    return LARGE_MODEL_ACTIVATION_BUDGET if size > LARGE_MODEL_PARAMETERS else ACTIVATION_BUDGET


def examples_per_chunk(template: TransformerModel, inputs: dict[str, torch.Tensor],
                       budget: int | None = None) -> int:
    """How many examples of `inputs` one differentiable forward may take within `budget`: per
    position the outputs (logits, their softmax and gradient) and per layer what backward keeps
    (about 16 widths and 3 MLP widths, and two attention maps per head). An estimate, not a
    measurement; the zoo's batches (64 windows, 128 checks) fit in one chunk, so their numbers are
    computed exactly as before, while a GPT-2-small's 50k-token logits are split."""
    if budget is None:
        budget = activation_budget(template)
    d, config = template.dims, template.config
    first = next(iter(inputs.values()))
    if "input_ids" in inputs:  # a distribution over the vocabulary at every position
        positions = first.shape[1]
        outputs = positions * config.vocab_size
    else:  # images: patches and the class token; one distribution over the labels
        sized = image_config(config)
        positions = (sized.image_size // sized.patch_size) ** 2 + 1
        outputs = config.num_labels
    per_layer = positions * (16 * d.d_model + 3 * d.d_mlp) + 2 * d.n_head * positions ** 2
    floats = 3 * outputs + d.n_layer * per_layer
    return max(1, int(budget // (4 * floats)))


def device_batches(batches: list, template: TransformerModel, device: torch.device) -> list:
    """The data source's batches, merged on a GPU into as few as a third of its free memory holds.

    Data sources cut evaluation batches for the CPU (GPT-2's 50k-token logits: 2 windows of 128 a
    batch, symalign.data.text.LOGIT_BUDGET), which leaves a GPU idle between 128 tiny launches per
    barrier point. Merging consecutive batches of the same shape changes nothing but the summation
    order of the loss (float64 per batch either way). The CPU keeps its batches (its numbers stay
    bit for bit; its memory is shared with the rest of the run)."""
    if device.type != "cuda" or len(batches) < 2:
        return batches
    room = examples_per_chunk(template, batches[0][0], activation_budget(template, device))
    merged: list = []
    group: list = []

    def flush() -> None:
        if group:
            merged.append(({k: torch.cat([x[k] for x, _ in group]) for k in group[0][0]},
                           torch.cat([y for _, y in group])))
            group.clear()

    for x, y in batches:
        fits = group and sum(len(g[1]) for g in group) + len(y) <= room and _same_shape(group[0], (x, y))
        if not fits:
            flush()
        group.append((x, y))
    flush()
    return merged


def _same_shape(first: tuple, other: tuple) -> bool:
    """Whether two batches can be concatenated along the batch axis."""
    (x0, y0), (x1, y1) = first, other
    return (y0.shape[1:] == y1.shape[1:] and x0.keys() == x1.keys()
            and all(x0[k].shape[1:] == x1[k].shape[1:] and x0[k].dtype == x1[k].dtype for k in x0))


def scored(targets: torch.Tensor) -> int:
    """How many targets a loss sums over (all but the ignored ones)."""
    return int((targets != IGNORE).sum())


def data_source(data):
    """A data source, or its spec loaded (`"digits"`, `"text:PATH"`): the Python API takes either, as the
    command line's --data does."""
    if isinstance(data, str):
        return load_data(data)
    if not hasattr(data, "eval_batches"):
        raise SymalignError(f"a data source is needed, e.g. load_data('digits') or the spec 'digits'; got {data!r}")
    return data


class Evaluator:
    """Evaluate parameter dictionaries (Hugging Face names) on fixed batches of a data source."""

    def __init__(self, template: TransformerModel, data, max_examples: int | None = None,
                 device: torch.device | str = "cpu"):
        require_at_least("--max-examples", max_examples, 1)
        data = data_source(data)
        data.check_model(template)
        self.device = device if isinstance(device, torch.device) else pick_device(device)
        self.family = template.family
        self.config = template.config
        self.module = weightless_module(template).to(self.device)
        self.names = module_names(self.module)
        batches = device_batches(list(data.eval_batches(template, max_examples)), template, self.device)
        self.batches = [({k: v.to(self.device) for k, v in x.items()}, y.to(self.device)) for x, y in batches]
        self.examples = sum(len(y) for _, y in self.batches)

    def hf_params(self, model: TransformerModel) -> dict[str, torch.Tensor]:
        return {k: v.to(self.device) for k, v in functional_params(self.family, self.config, model.tensors,
                                                                         self.names).items()}

    @torch.no_grad()
    def __call__(self, params: dict[str, torch.Tensor], tick: Callable[[], None] | None = None) -> Metrics:
        """Loss and accuracy at `params`; `tick` is called after each batch (progress on real-size models)."""
        return self.evaluate_batches(params, self.batches, tick)

    @torch.no_grad()
    def evaluate_batches(self, params: dict[str, torch.Tensor], batches: list,
                         tick: Callable[[], None] | None = None) -> Metrics:
        total, correct, count = 0.0, 0, 0
        classified = self.family.task == "sequence-classification"
        predicted, targets = [], []
        for inputs, y in batches:
            logits = functional_call(self.module, params, args=(), kwargs=inputs).logits
            if self.family.task == "causal-lm":
                logits = logits[:, : y.shape[1]]
            loss, right = batch_loss(logits, y)
            total += float(loss)
            correct += int(right)
            count += scored(y)
            if classified:
                predicted.append(logits.argmax(-1).reshape(-1).cpu())
                targets.append(y.reshape(-1).cpu())
            if tick:
                tick()
        f1 = macro_f1(torch.cat(targets), torch.cat(predicted)) if classified and targets else None
        return Metrics(total / count, correct / count, sum(len(y) for _, y in batches), f1)


def macro_f1(targets: torch.Tensor, predicted: torch.Tensor) -> float:
    """The classes' F1 averaged with equal weight (scikit-learn's, over the classes either side names)."""
    from sklearn.metrics import f1_score  # scikit-learn loads in about a second: only classifiers pay it

    return float(f1_score(targets.numpy(), predicted.numpy(), average="macro", zero_division=0))


def evaluate(model: TransformerModel, data, max_examples: int | None = None, device: str = "cpu") -> Metrics:
    """Loss and accuracy of one model on the evaluation split."""
    ev = Evaluator(model, data, max_examples, device)
    return ev(ev.hf_params(model))
