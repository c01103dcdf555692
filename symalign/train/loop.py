"""Train a recipe for one seed (deterministic for a seed on a given machine, with progress), and the zoo's build
side: each recipe for each seed trained into assets/zoo and recorded in the manifest."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import torch

from symalign.data import load_data
from symalign.data.text import TextData, char_tokenizer
from symalign.device import pick_device
from symalign.errors import SymalignError
from symalign.landscape.evaluate import batch_loss, evaluate, scored
from symalign.models import load_model
from symalign.models.family import TransformerModel
from symalign.models.io import FAMILIES, family_of
from symalign.models.tiny import tiny_config
from symalign.train.recipes import RECIPES, Recipe
from symalign.zoo import add_entry, zoo_dir

Progress = Callable[[int, int, float], None]  # step, total, loss


def recipe_named(name: str | Recipe) -> Recipe:
    """A recipe by name; a Recipe passes through (a benchmark's scaled variant of a named one)."""
    if isinstance(name, Recipe):
        return name
    if name not in RECIPES:
        raise SymalignError(f"unknown recipe {name!r}; known: {', '.join(RECIPES)}")
    return RECIPES[name]


def _schedule(recipe: Recipe, optimizer, steps: int):
    if recipe.schedule == "onecycle":
        # OneCycleLR divides by zero when a phase is empty (e.g. 5 steps at pct_start 0.2): smoke runs of
        # under 10 steps follow the first part of a 10-step cycle instead.
        return torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=recipe.lr, total_steps=max(steps, 10),
                                                   pct_start=0.2)
    warmup = max(1, steps // 20)
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, steps) / steps)))


HEAD_MODULES = ("pooler", "classifier", "score")  # a classifier's own parameters: the rest is the base's body


def _load_body(module, base, new_head: bool) -> None:
    """The base's weights into `module`; with a new head only its body, every body weight accounted for."""
    missing, _ = module.load_state_dict(base.to_module().state_dict(), strict=not new_head)
    body = [k for k in missing if not any(part in k.split(".") for part in HEAD_MODULES)]
    if body:
        raise SymalignError(f"the base model lacks weights the fine-tune needs: {', '.join(body[:3])}")


def train(recipe_name: str | Recipe, seed: int, out: str | Path, steps: int | None = None, data_spec: str | None = None,
          device: str = "auto", progress: Progress | None = None) -> dict:
    """Train, save a Hugging Face directory (with tokenizer for text) and return its record."""
    recipe = recipe_named(recipe_name)
    spec = data_spec or recipe.data
    if spec is None:
        raise SymalignError(f"recipe {recipe.name} needs --data (e.g. {recipe.name.split('-')[1]}:PATH)")
    data = load_data(spec)
    out = Path(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _train(recipe, seed, out, steps, spec, data_spec, data, device, progress)
    except BaseException:  # stopped (cancelled, diverged, interrupted): leave no half-written model behind
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise


def _train(recipe: Recipe, seed: int, out: Path, steps: int | None, spec: str, data_spec: str | None, data,
           device: str, progress: Progress | None) -> dict:
    steps = recipe.steps if steps is None else steps
    dev = pick_device(device)
    torch.manual_seed(seed)
    generator = torch.Generator().manual_seed(seed)

    init = recipe.init.format(seed=seed) if recipe.init else None
    base = load_model(init) if init else None  # a fine-tune starts from this model
    if base is not None:
        config = base.config.__class__.from_dict(base.config.to_dict())
        if FAMILIES[recipe.family] is not base.family:  # the base's body with a new head (a classifier)
            from symalign.models.family_hooks import as_classifier

            # the base's body with a classifier of the data's classes, named as the data names them
            config = as_classifier(config, FAMILIES[recipe.family].hf_class_name, data.num_labels,
                                   getattr(data, "label_names", None))
        for extra in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            src = Path(base.source) / extra
            if src.is_file():
                (out / extra).write_bytes(src.read_bytes())
    else:
        model_kwargs = dict(recipe.model)
        if isinstance(data, TextData):
            tokenizer = char_tokenizer(data.text, mask=FAMILIES[recipe.family].task == "masked-lm")
            tokenizer.save_pretrained(str(out))
            model_kwargs["vocab"] = len(tokenizer)
        config = tiny_config(recipe.family, **model_kwargs)
    for key in ("attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob"):
        if hasattr(config, key):
            setattr(config, key, 0.0)
    family = family_of(config)
    template = TransformerModel(family, config, {}, str(out))
    data.check_model(template)
    module = family.hf_class(config)
    if base is not None:
        _load_body(module, base, new_head=family is not base.family)
    module = module.to(dev).train()
    optimizer = torch.optim.AdamW(module.parameters(), lr=recipe.lr, weight_decay=recipe.weight_decay)
    scheduler = _schedule(recipe, optimizer, steps)
    augment = None
    if recipe.augment:
        from symalign.data.images import cifar_augment

        augment = cifar_augment(generator)
    start = time.perf_counter()
    for step in range(steps):
        inputs, y = data.train_batch(template, recipe.batch_size, generator, augment)
        logits = module(**{k: v.to(dev) for k, v in inputs.items()}).logits
        loss_sum, _ = batch_loss(logits, y.to(dev))
        loss = loss_sum / max(scored(y), 1)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if not torch.isfinite(loss):
            raise SymalignError(f"training diverged at step {step} (loss {float(loss)}); try a smaller lr")
        if progress:
            progress(step + 1, steps, float(loss.detach()))
    seconds = time.perf_counter() - start
    module.cpu().eval().save_pretrained(str(out))
    metrics = evaluate(load_model(out), data)
    record = {"recipe": recipe.name, "seed": seed, "steps": steps, "data": spec, "train_seconds": round(seconds, 1),
              "eval_loss": metrics.loss, "eval_accuracy": metrics.accuracy, "eval_examples": metrics.examples,
              **({"init": init} if init else {}),
              "command": f"symalign train {recipe.name} --seed {seed} --out {out}"
                         + (f" --steps {steps}" if steps != recipe.steps else "")
                         + (f" --data {spec}" if data_spec else "")}
    (out / "training.json").write_text(json.dumps(record, indent=2))
    return record


def build(recipes: list[str], seeds: list[int] | None = None, progress=None) -> list[dict]:
    """Train each recipe for each seed (default: the recipe's own seeds) into the zoo and record it."""
    records = []
    for recipe in recipes:
        for seed in seeds if seeds is not None else recipe_named(recipe).seeds:
            folder = zoo_dir() / recipe / str(seed)
            record = train(recipe, seed, folder, progress=progress)
            record["command"] = f"symalign train {recipe} --seed {seed} --out assets/zoo/{recipe}/{seed}"
            (folder / "training.json").write_text(json.dumps(record, indent=2))
            add_entry(record, folder)
            records.append(record)
    return records
