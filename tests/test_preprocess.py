"""Images reach a checkpoint as it expects them: resized and normalised by its
preprocessor_config.json (ViT-B/16 style), converted per batch; the zoo's own shape is untouched."""

from __future__ import annotations

import json

import pytest
import torch

from symalign.data import load_data
from symalign.landscape.evaluate import evaluate
from symalign.models import load_model, save_model
from symalign.models.tiny import random_model, tiny_config

IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]


@pytest.fixture
def rgb_vit(tmp_path):
    """A 3-channel 32-pixel ViT saved with a ViT-B-style preprocessor config."""
    folder = save_model(random_model(tiny_config("vit", image_size=32, patch=8, channels=3), seed=0), tmp_path / "vit")
    (folder / "preprocessor_config.json").write_text(json.dumps({
        "image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": 32, "width": 32},
        "resample": 2, "do_normalize": True, "image_mean": IMAGENET_MEAN, "image_std": IMAGENET_STD}))
    return load_model(str(folder))


def test_digits_reach_a_224_style_checkpoint_resized_and_normalised_by_its_processor(rgb_vit):
    digits = load_data("digits")
    digits.check_model(rgb_vit)
    (inputs, y), = list(digits.eval_batches(rgb_vit, max_examples=5))
    x = inputs["pixel_values"]
    assert x.shape == (5, 3, 32, 32) and len(y) == 5
    # back to pixels with the processor's statistics: grey (all channels equal), in [0, 1], and the
    # mean brightness of each digit kept by the (area-preserving) resize
    pixels = x * torch.tensor(IMAGENET_STD)[:, None, None] + torch.tensor(IMAGENET_MEAN)[:, None, None]
    assert torch.allclose(pixels[:, 0], pixels[:, 1], atol=1e-5) and pixels.min() > -1e-5 and pixels.max() < 1 + 1e-5
    original = (digits.eval_x[:5] + 1) / 2
    assert torch.allclose(pixels[:, 0].mean((-1, -2)), original[:, 0].mean((-1, -2)), atol=0.02)
    assert evaluate(rgb_vit, digits, max_examples=16).loss > 0


def test_the_zoo_shape_is_passed_through_untouched():
    model = load_model("zoo:vit-digits/0")
    digits = load_data("digits")
    assert digits.converter(model) is None
    (inputs, _), = list(digits.eval_batches(model, max_examples=7))
    assert torch.equal(inputs["pixel_values"], digits.eval_x[:7])


def test_a_processor_at_odds_with_the_model_is_one_clear_error(rgb_vit):
    from symalign.errors import SymalignError

    (tmp := rgb_vit.source)
    config = json.loads(open(f"{tmp}/preprocessor_config.json").read())
    config["size"] = {"height": 224, "width": 224}
    open(f"{tmp}/preprocessor_config.json", "w").write(json.dumps(config))
    with pytest.raises(SymalignError, match="224×224 images but it takes 32×32"):
        load_data("digits").check_model(rgb_vit)
