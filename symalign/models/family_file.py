"""A family as a data file: one TOML file per architecture, read by one loader into a `Family`.

Why: the spec, the weight map, the refusals and the small configs of an architecture are data (mergekit
describes an architecture by a JSON of weight-name templates); only the algebra that really differs (ViT's
absent q/k/v biases, a classifier's score head) is a Python hook, named from the file as "module:function".

A file holds (docs/extending.md shows one whole):
- `name`, `title`, `task`, `spaces` (attention | grouped_attention | experts | shared_expert), `types` (model
  type -> Hugging Face class: one Family per entry), `variant`, `output`, `fused_qkv`, `canonical` (untie |
  as-is | a hook), `inputs`, `adapters`, `context`, `final_norm_readers` (expressions or hooks);
- `[vars]`: strings substituted into every Hugging Face name ("{prefix}.embeddings..."); `layer`: the per-layer
  prefix of block rows ("model.layers.{i}.");
- `[dims]`: each field of `Dims` as an expression over the config;
- `[outer]`, `[block]`, `[final_norm]`: one entry per logical tensor: `tags` (space:variance words, "-" for an
  axis no space acts on), `hf` (its Hugging Face name), `pattern`, `part`, `split`, `fallback`, `when` (an
  expression: the row exists only where it holds), `name` (the logical name when the key is not it);
- `[norm_readers]`, `[hook_points]`; `[refuse.NAME]`: `when` and `reason` (or a whole `message`), checked in
  order;
- `[tiny]`: `config` (the transformers config class; `configs`: by model type), `defaults` (the small model's
  keywords), `fields` (each config field as an expression over those keywords; "-" drops one a file
  extends), or `hook`;
- `extends`: another file whose tables this one updates entry by entry; `remove`: {table: [keys]} to drop.
  A file with `abstract = true` is only extended.

Expressions are Python expressions over the config's attributes (a missing one reads None), evaluated with no
builtins but the few in `_BUILTINS`."""

from __future__ import annotations

import ast
import os
import re
import sys
from collections.abc import Callable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from symalign.errors import ModelLoadError
from symalign.models.family import Family, causal_inputs, positions, untied_config
from symalign.models.layout import (
    FINAL_NORM_READERS,
    Dims,
    attention_spaces,
    expert_spaces,
    grouped_attention_spaces,
    shared_expert_spaces,
)
from symalign.models.weight_map import Row
from symalign.registry import resolve

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FOLDER = Path(__file__).with_name("families")
USER_FOLDERS = "SYMALIGN_FAMILIES"  # environment: more folders of family files (os.pathsep between), read first
SPACES = {"attention": attention_spaces, "grouped_attention": grouped_attention_spaces, "experts": expert_spaces,
          "shared_expert": shared_expert_spaces}
ROW_TABLES = ("outer", "block", "final_norm")
# the tables a file that extends another updates entry by entry (any other key it gives replaces the base's)
MERGED = ROW_TABLES + ("dims", "vars", "tiny", "refuse", "norm_readers")
_BUILTINS = {"int": int, "float": float, "str": str, "len": len, "min": min, "max": max, "any": any, "all": all,
             "isinstance": isinstance, "dict": dict, "True": True, "False": False, "None": None}
_HOOK = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")  # "module:function"
_FORBIDDEN = (ast.Lambda, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


class Names(Mapping):
    """A config's attributes as names (a missing one is None), with `extra` names over them."""

    def __init__(self, config: Any, extra: dict | None = None):
        self.config, self.extra = config, extra or {}

    def __getitem__(self, key: str):
        if key in self.extra:
            return self.extra[key]
        if key in _BUILTINS:
            raise KeyError(key)  # falls through to the builtins
        return getattr(self.config, key, None)

    def __iter__(self):
        return iter(self.extra)

    def __len__(self) -> int:
        return len(self.extra)


@cache
def _compiled(expression: str):
    tree = ast.parse(expression, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, _FORBIDDEN) or (isinstance(node, ast.Attribute) and node.attr.startswith("_")):
            raise ValueError(f"family file expression {expression!r}: {type(node).__name__} is not allowed")
    return compile(tree, f"<family expression {expression!r}>", "eval")


def evaluate(expression: str | int | float | bool, config: Any, **extra):
    """The value of a data file's expression over `config` (a literal stays as it is)."""
    if not isinstance(expression, str):
        return expression
    return eval(_compiled(expression), {"__builtins__": _BUILTINS}, Names(config, extra))  # noqa: S307


def _tags(words: str) -> tuple[str | None, ...]:
    return tuple(None if w == "-" else w for w in words.split())


def folders() -> list[Path]:
    """Where family files are looked for: the folders $SYMALIGN_FAMILIES names, then the package's own."""
    extra = [Path(p) for p in os.environ.get(USER_FOLDERS, "").split(os.pathsep) if p]
    return [*extra, FOLDER]


def _read(name: str) -> dict:
    path = next((f / f"{name}.toml" for f in folders() if (f / f"{name}.toml").is_file()), None)
    if path is None:
        raise ValueError(f"no family file {name}.toml in {', '.join(map(str, folders()))}")
    with path.open("rb") as f:
        data = tomllib.load(f)
    base = data.pop("extends", None)
    if base is None:
        return data
    merged = _read(base)
    merged.pop("abstract", None)
    for table, keys in data.pop("remove", {}).items():
        for key in keys:
            merged.get(table, {}).pop(key, None)
    for key, value in data.items():
        if key in MERGED and isinstance(value, dict):
            target = merged.setdefault(key, {})
            for entry, fields in value.items():
                both = isinstance(fields, dict) and isinstance(target.get(entry), dict)
                target[entry] = {**target[entry], **fields} if both else fields
        else:
            merged[key] = value
    return merged


def _rows(data: dict, table: str) -> list[tuple[str, dict]]:
    """(logical name, entry) of a row table, names and Hugging Face names filled in from `vars`."""
    values = {**data.get("vars", {}), "i": "{i}"}
    out = []
    for key, entry in data.get(table, {}).items():
        entry = dict(entry)
        if "hf" in entry:
            prefix = data.get("layer", "") if table == "block" else ""
            entry["hf"] = (prefix + entry["hf"]).format(**values)
        if "fallback" in entry:
            entry["fallback"] = entry["fallback"].format(**values)
        out.append((entry.get("name", key), entry))
    return out


def _present(entry: dict, config: Any) -> bool:
    return "when" not in entry or bool(evaluate(entry["when"], config))


def _tag_table(rows: list[tuple[str, dict]]) -> Callable[[Any], dict]:
    def tags(config: Any) -> dict[str, tuple[str | None, ...]]:
        return {name: _tags(e["tags"]) for name, e in rows if "tags" in e and _present(e, config)}
    return tags


def _weight_map(data: dict) -> Callable[[Any], list[Row]]:
    rows = [(name, e, table) for table in ROW_TABLES for name, e in _rows(data, table) if "hf" in e]

    def weight_map(config: Any) -> list[Row]:
        return [Row(name, e["hf"], e.get("pattern", ""), e.get("part"), tuple(e.get("split", ())),
                    e.get("fallback", "")) for name, e, _ in rows if _present(e, config)]
    return weight_map


def _dims(data: dict) -> Callable[[Any], Dims]:
    fields = data["dims"]
    return lambda config: Dims(**{k: evaluate(v, config) for k, v in fields.items()})


def _check(data: dict, title: str) -> Callable[[Any], None]:
    refusals = list(data.get("refuse", {}).values())

    def check_config(config: Any) -> None:
        for refusal in refusals:
            if evaluate(refusal["when"], config):
                names = {"title": title}
                if "message" in refusal:
                    raise ModelLoadError(evaluate("f" + repr(refusal["message"]), config, **names))
                reason = evaluate("f" + repr(refusal["reason"]), config, **names)
                raise ModelLoadError(f"unsupported {config.model_type} layout: {reason}")
    return check_config


def _tiny(data: dict, model_type: str, hf_class_name: str) -> Callable[..., Any] | None:
    tiny = data.get("tiny")
    if not tiny:
        return None
    if "hook" in tiny:
        hook = resolve(tiny["hook"])
        return lambda **options: hook(hf_class_name=hf_class_name, **options)
    defaults, fields = tiny.get("defaults", {}), tiny["fields"]

    def tiny_config(**options):
        """A small config of this family: the file's `[tiny]` defaults, updated by `options` it knows."""
        import transformers

        known = {**defaults, **{k: v for k, v in options.items() if k in defaults}}
        values = {k: evaluate(v, None, **known) for k, v in fields.items() if v != "-"}
        config_class = tiny.get("configs", {}).get(model_type, tiny.get("config"))
        return getattr(transformers, config_class)(**values, architectures=[hf_class_name])
    return tiny_config


def _hook_or(value: str | None, default: Callable) -> Callable:
    return resolve(value) if value else default


def _expression_or(value: str | None, default: Callable) -> Callable:
    """A per-config value: an expression over the config, a "module:function" hook, or `default`."""
    if value is None:
        return default
    if _HOOK.fullmatch(value):
        return resolve(value)
    return lambda config: evaluate(value, config)


def families(name: str) -> list[Family]:
    """The Family objects of one data file (one per model type it lists), [] for an abstract file."""
    data = _read(name)
    if data.get("abstract"):
        return []
    title = data.get("title", data["name"])
    canonical = {"untie": untied_config, "as-is": lambda config: config}.get(data.get("canonical", "untie"))
    weight_map = _weight_map(data)
    out = []
    for model_type, hf_class_name in data["types"].items():
        family = Family(
            name=data["name"], model_type=model_type, hf_class_name=hf_class_name, title=title,
            task=data.get("task", "causal-lm"), output=data.get("output", "logits"), variant=data.get("variant", ""),
            outer_tags=_tag_table(_rows(data, "outer")), block=_tag_table(_rows(data, "block")),
            final_norm=_tag_table(_rows(data, "final_norm"))(None),
            dims=_dims(data), weight_map=weight_map, spaces=SPACES[data.get("spaces", "attention")],
            norm_readers={k: tuple(v) for k, v in data.get("norm_readers", {}).items()},
            final_norm_readers=_expression_or(data.get("final_norm_readers"), lambda config: FINAL_NORM_READERS),
            hook_points={k: v.format(**data.get("vars", {}), i="{i}") for k, v in data.get("hook_points", {}).items()},
            fused_qkv=data.get("fused_qkv", "blocks"),
            canonical_config=canonical or resolve(data["canonical"]),
            random_inputs=_hook_or(data.get("inputs"), causal_inputs),
            context=_expression_or(data.get("context"), positions),
            check_config=_check(data, title), tiny=_tiny(data, model_type, hf_class_name),
            tied_head=data.get("tied_head", True),
        )
        if "adapters" in data:
            family = resolve(data["adapters"])(family)
        out.append(family)
    return out


def family_files() -> list[str]:
    """The names of the data files in the family folders, in name order (a user's file of a built-in name
    replaces it)."""
    return sorted({p.stem for folder in folders() for p in folder.glob("*.toml")})
