"""Stand-ins for hub checkpoints, built offline: models of the real configs (GPT-2-small,
BERT-base, TinyLlama, Pythia-160M, ViT-B/16) with random weights, tokenizers trained here with `tokenizers`
on the bundled plays (byte-level BPE, WordPiece), laid out as a Hugging Face hub cache
(`hub/models--org--name/snapshots/REV/`, `refs/main` holding REV).

Tests and benchmarks use them because nothing can be downloaded at run time; the loading code
they exercise is the same that reads a real cache."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import torch

# The hub's configs at their real shapes (the fields that matter; the rest are transformers' defaults).
REAL_CONFIGS: dict[str, dict] = {
    "gpt2-small": dict(model_type="gpt2", n_layer=12, n_embd=768, n_head=12, vocab_size=50257, n_positions=1024,
                       architectures=["GPT2LMHeadModel"], bos_token_id=50256, eos_token_id=50256),
    "bert-base": dict(model_type="bert", num_hidden_layers=12, hidden_size=768, num_attention_heads=12,
                      intermediate_size=3072, vocab_size=30522, max_position_embeddings=512,
                      architectures=["BertForMaskedLM"], pad_token_id=0),
    "tinyllama": dict(model_type="llama", num_hidden_layers=22, hidden_size=2048, num_attention_heads=32,
                      num_key_value_heads=4, intermediate_size=5632, vocab_size=32000,
                      max_position_embeddings=2048, hidden_act="silu", rms_norm_eps=1e-5, rope_theta=10000.0,
                      tie_word_embeddings=False, architectures=["LlamaForCausalLM"], bos_token_id=1, eos_token_id=2),
    "pythia-160m": dict(model_type="gpt_neox", num_hidden_layers=12, hidden_size=768, num_attention_heads=12,
                        intermediate_size=3072, vocab_size=50304, max_position_embeddings=2048, rotary_pct=0.25,
                        rotary_emb_base=10000, use_parallel_residual=True, tie_word_embeddings=False,
                        architectures=["GPTNeoXForCausalLM"], bos_token_id=0, eos_token_id=0),
    "vit-b16": dict(model_type="vit", num_hidden_layers=12, hidden_size=768, num_attention_heads=12,
                    intermediate_size=3072, image_size=224, patch_size=16, num_channels=3, num_labels=1000,
                    qkv_bias=True, architectures=["ViTForImageClassification"]),
}


def real_config(name: str, **overrides):
    """A transformers config of a real checkpoint's shape (`overrides` shrink it for CI)."""
    from transformers import AutoConfig

    fields = dict(REAL_CONFIGS[name], **overrides)
    return AutoConfig.for_model(fields.pop("model_type"), **fields)


def bpe_tokenizer(text: str, vocab_size: int):
    """A byte-level BPE tokenizer (GPT-2's and Llama's kind) trained on `text`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([text], trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", bos_token="<|endoftext|>",
                                   unk_token="<|endoftext|>")


def wordpiece_tokenizer(text: str, vocab_size: int):
    """A WordPiece tokenizer (BERT's kind, with [MASK], [CLS], [SEP]) trained on `text`."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator([text], trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=special,
                                                              show_progress=False))
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]")


def write_checkpoint(config, folder: str | Path, seed: int = 0, dtype: torch.dtype = torch.float32,
                     tokenizer=None, max_shard_size: str | None = None) -> Path:
    """A randomly initialised model of `config` saved as a Hugging Face folder (in `dtype`,
    sharded when `max_shard_size` is given), with its tokenizer."""
    from symalign.models.io import _quiet_transformers, family_of

    _quiet_transformers()
    folder = Path(folder)
    torch.manual_seed(seed)
    module = family_of(config).hf_class(config).to(dtype)
    kwargs = {"max_shard_size": max_shard_size} if max_shard_size else {}
    module.save_pretrained(str(folder), **kwargs)
    del module
    if tokenizer is not None:
        tokenizer.save_pretrained(str(folder))
    return folder


def put_in_cache(folder: str | Path, repo_id: str, hf_home: str | Path, branch: str = "main") -> str:
    """Copy a model folder into `hf_home`'s hub cache as `repo_id` at a commit named by its
    content; `refs/BRANCH` points at it. Returns the commit hash (a revision users may name)."""
    folder = Path(folder)
    digest = hashlib.sha1()
    for path in sorted(folder.iterdir()):
        digest.update(path.name.encode())
        digest.update(hashlib.sha1(path.read_bytes()).digest())
    commit = digest.hexdigest()
    repo = Path(hf_home) / "hub" / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True, exist_ok=True)
    for path in folder.iterdir():
        if path.is_file():
            shutil.copyfile(path, snapshot / path.name)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / branch).write_text(commit)
    return commit

