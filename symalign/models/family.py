"""What an architecture family must provide: a name mapping to the logical layout, its
embedding/head tags, and how to feed it inputs. The science never looks past this interface."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from symalign.models.layout import FINAL_NORM_READERS, Dims, attention_spaces, build_spec
from symalign.models.weight_map import adapters
from symalign.symmetry.spec import Space, SymmetrySpec

Tensors = dict[str, torch.Tensor]


def untied_config(config: Any) -> Any:
    """A copy of `config` whose LM head has its own weights: the canonical form folds the final norm
    into the head, which then differs from the token embedding it was tied to."""
    config = config.__class__.from_dict(config.to_dict())
    config.tie_word_embeddings = False
    return config


def check_tied(t: Tensors, config: Any, what: str) -> None:
    """A tied head must still equal the token embedding (a transform that moved one moved both)."""
    if getattr(config, "tie_word_embeddings", False) and not torch.equal(t["head.weight"], t["embed.token"]):
        from symalign.errors import ModelLoadError

        raise ModelLoadError(f"this {what} ties its output head to the token embedding, "
                             "but the two now differ; untie it")


def token_inputs(vocab_size: int, context: int, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """Random token ids [n, min(context, 16)]: what function-preservation checks feed a text model."""
    return {"input_ids": torch.randint(0, vocab_size, (n, min(context, 16)), generator=generator)}


def positions(config: Any) -> int:
    """A text model's context: max_position_embeddings, or GPT-2's n_positions."""
    return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions", 0)


def causal_inputs(config: Any, n: int, generator: torch.Generator) -> dict[str, torch.Tensor]:
    """What a decoder's function checks read: random token ids within its vocabulary and context."""
    return token_inputs(config.vocab_size, positions(config), n, generator)


@dataclass(frozen=True)
class Family:
    """One architecture family (e.g. GPT-2): declarative rows plus the few functions that differ."""

    name: str
    model_type: str
    hf_class_name: str
    # The embedding and head rows; a function of the config where they vary (OPT's project_in/out).
    outer_tags: dict[str, tuple[str | None, ...]] | Callable[[Any], dict]
    dims: Callable[[Any], Dims]
    # Hugging Face names <-> logical tensors: read from `weight_map` both ways when not given (a family with
    # something the rows cannot say, ViT's absent q/k/v biases, passes its own pair).
    to_logical: Callable[[Tensors, Any], Tensors] | None = None
    from_logical: Callable[[Tensors, Any], Tensors] | None = None
    # The config of the canonical form (a decoder's head is untied from its embedding) and the random inputs a
    # function check feeds; a decoder LM's by default.
    canonical_config: Callable[[Any], Any] = field(default=untied_config)
    random_inputs: Callable[[Any, int, torch.Generator], dict[str, torch.Tensor]] = field(default=causal_inputs)
    check_config: Callable[[Any], None] = field(default=lambda config: None)
    # Hugging Face module names ({i} = layer) whose *inputs* are the MLP hidden units and the
    # concatenated head outputs, and whose outputs hold q|k (activation matching hooks them).
    hook_points: dict[str, str] = field(default_factory=dict)
    # The weight map's rows of a config (symalign.models.weight_map): the adapters above when they are not
    # given, and `symalign inspect --layout`; None for a family with a hand-written pair.
    weight_map: Callable[[Any], list] | None = None
    # How messages name the family ("GPT-2"; the registry name when empty): a tied head that no longer
    # equals its embedding is refused in its words.
    title: str = ""
    # A fused `qkv` hook point's output order (symalign.match.activation.capture: "blocks" or "per-head").
    fused_qkv: str = "blocks"
    # The block's tag rows, the final norm's, and which norm feeds which readers (canonical form).
    # `block` may be a function of the config where the layout varies (a Llama with or without biases).
    block: dict[str, tuple[str | None, ...]] | Callable[[Any], dict] = field(default_factory=dict)
    final_norm: dict[str, tuple[str | None, ...]] = field(default_factory=dict)
    norm_readers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # What reads the final norm: the head, or a projection before it (OPT's project_out).
    final_norm_readers: Callable[[Any], tuple[str, ...]] = field(default=lambda config: FINAL_NORM_READERS)
    # The per-layer spaces its tag rows name (their kinds are what the app toggles and matchers solve).
    spaces: Callable[[Dims], tuple[Space, ...]] = attention_spaces
    # causal-lm | masked-lm | image-classification | sequence-classification | text-embedding (no loss: no data
    # source fits): which data sources fit
    task: str = "causal-lm"
    # The field of the model's output a function check compares (a text tower's projected embedding, not logits).
    output: str = "logits"
    # Another head on a model type that has one already (BERT's sequence classifier beside its masked-LM
    # family): its registry key is MODEL_TYPE-VARIANT, and the config's `architectures` picks it.
    variant: str = ""
    # Whether a tied config's head must still equal its token embedding when written (a classifier's score
    # head is never the embedding, whatever the config says).
    tied_head: bool = True

    def __post_init__(self) -> None:
        if self.to_logical is None or self.from_logical is None:
            if self.weight_map is None:
                raise ValueError(f"family {self.name}: give a weight_map or both to_logical and from_logical")
            check = (lambda t, config: check_tied(t, config, self.title or self.name)) if self.tied_head else None
            read, write = adapters(self.weight_map, self.dims, check)
            object.__setattr__(self, "to_logical", self.to_logical or read)
            object.__setattr__(self, "from_logical", self.from_logical or write)

    @property
    def key(self) -> str:
        return f"{self.model_type}-{self.variant}" if self.variant else self.model_type
    context: Callable[[Any], int] = field(default=positions)
    # Small models of the family (tests, `symalign init`): `tiny(**options)` takes symalign.models.tiny's
    # keywords (those of other families are ignored).
    tiny: Callable[..., Any] | None = None

    @property
    def hf_class(self):
        import transformers

        return getattr(transformers, self.hf_class_name)

    def spec(self, config: Any, canonical: bool) -> SymmetrySpec:
        block = self.block(config) if callable(self.block) else self.block
        dims = self.dims(config)
        return build_spec(self.name, dims, self.outer(config), canonical, block, self.final_norm, self.spaces(dims))

    def outer(self, config: Any) -> dict[str, tuple[str | None, ...]]:
        """The embedding and head tag rows of this config."""
        return self.outer_tags(config) if callable(self.outer_tags) else self.outer_tags


@dataclass(frozen=True)
class TransformerModel:
    """A loaded model: its family, Hugging Face config and logical tensors (never mutated)."""

    family: Family
    config: Any
    tensors: Tensors
    source: str = ""
    dtype: torch.dtype = torch.float32  # the precision it was stored in (export keeps it); tensors are float32

    @property
    def dims(self) -> Dims:
        return self.family.dims(self.config)

    def with_tensors(self, tensors: Tensors, config: Any = None, source: str | None = None) -> TransformerModel:
        return replace(self, tensors=tensors, config=config or self.config,
                       source=self.source if source is None else source)

    def to_module(self) -> torch.nn.Module:
        """A fresh float32 Hugging Face module holding these weights, in eval mode."""
        module = self.family.hf_class(self.config).float()
        state = self.family.from_logical(self.tensors, self.config)
        missing, unexpected = module.load_state_dict(state, strict=False)
        tied = {"lm_head.weight"} if getattr(self.config, "tie_word_embeddings", False) else set()
        if set(missing) - tied or unexpected:
            raise RuntimeError(f"layout mismatch: missing {missing}, unexpected {unexpected}")
        return module.eval()
