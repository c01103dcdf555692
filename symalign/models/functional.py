"""Running a model family's Hugging Face module on parameters held elsewhere (torch.func):
one module structure without weights of its own serves every parameter set, so evaluating a
path of models, or a learned transform, never copies weights into a module."""

from __future__ import annotations

import copy

import torch

from symalign.models.family import Family, Tensors, TransformerModel


def module_names(module: torch.nn.Module) -> set[str]:
    """The names functional_call takes for this module: a tied parameter (a BERT decoder that is the
    token embedding) answers to one name only, and passing both raises."""
    return {n for n, _ in module.named_parameters()} | {n for n, _ in module.named_buffers()}


def functional_params(family: Family, config, tensors: Tensors, names: set[str],
                      contiguous: bool = True) -> dict[str, torch.Tensor]:
    """Logical `tensors` as the Hugging Face parameters functional_call takes for a module with
    these `names` (module_names). `contiguous=False` keeps the layout change's views (GPT-2's
    Conv1D weights are transposes): the matrix products take them as they are, and no copy of
    those weights is made (real checkpoints: 2.7 bytes per parameter); contiguous copies run the
    products on the same memory layout as ever (the zoo's numbers, bitwise)."""
    params = {k: v for k, v in family.from_logical(tensors, config).items() if k in names}
    return {k: v.contiguous() for k, v in params.items()} if contiguous else params


# Activations that transformers computes as a chain of Python-level tensor operations, and the fused
# kernel of the same function. GPT-2's `gelu_new` is 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), as is
# torch's gelu(approximate="tanh") (`gelu_pytorch_tanh`): the same logits to 4e-7, and a forward and
# backward 1.22x faster on the held-out GPT-2, 1.15x at GPT-2-small shapes (benchmarks/fused_activation.py).
FUSED_ACTIVATIONS = {"gelu_new": "gelu_pytorch_tanh"}
ACTIVATION_FIELDS = ("activation_function", "hidden_act")


def fused_config(config):
    """`config`, or a copy of it whose activation is the fused kernel of the same function."""
    slow = [f for f in ACTIVATION_FIELDS if getattr(config, f, None) in FUSED_ACTIVATIONS]
    if not slow:
        return config
    config = copy.deepcopy(config)
    for f in slow:
        setattr(config, f, FUSED_ACTIVATIONS[getattr(config, f)])
    return config


def weightless_module(template: TransformerModel, fused: bool = True) -> torch.nn.Module:
    """The template's module structure and buffers with no weights of its own: functional_call is
    always given every parameter, so a copy of the weights here would only cost memory (4 bytes per
    parameter). Built without initialisation (untouched memory), then parameters are replaced by
    empty placeholders; tied parameters keep one placeholder, so the tie is still seen. A slow
    activation runs as its fused kernel (`fused_config`): every path and learned step is faster;
    `fused=False` keeps the config's own (what reads activations values, not losses)."""
    from transformers.initialization import no_init_weights

    with no_init_weights():
        config = fused_config(template.config) if fused else template.config
        module = template.family.hf_class(config).float().eval()
    placeholders: dict[int, torch.nn.Parameter] = {}
    originals = list(module.parameters())  # alive until every one is replaced: ids stay unique
    for sub in module.modules():
        for name, param in list(sub._parameters.items()):
            if param is not None:
                sub._parameters[name] = placeholders.setdefault(id(param), torch.nn.Parameter(torch.empty(0),
                                                                                               requires_grad=False))
    del originals
    return module


@torch.no_grad()
def logits_of(model: TransformerModel, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    """The model's logits (its family's `output`) on `inputs`, without building a module that holds a copy
    of its weights (nor, at real scale, a contiguous copy of its transposed layouts: 2.7 bytes per parameter)."""
    from torch.func import functional_call

    from symalign.memory import LARGE_MODEL_PARAMETERS

    module = weightless_module(model)
    large = sum(t.numel() for t in model.tensors.values()) > LARGE_MODEL_PARAMETERS  # the zoo keeps its layout
    params = functional_params(model.family, model.config, model.tensors, module_names(module), contiguous=not large)
    return getattr(functional_call(module, params, args=(), kwargs=inputs), model.family.output)
