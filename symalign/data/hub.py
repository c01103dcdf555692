"""Data sets by hub id: `hf:NAME[:CONFIG][@SPLIT]` (`hf:wikitext:wikitext-2-raw-v1@validation`,
`hf:uoft-cs/cifar10@test`), read through the `datasets` library.

Online, `datasets` downloads and caches them. With `HF_HUB_OFFLINE=1` a data set loads from its
snapshot in the hub cache (as `huggingface_hub` lays it out, and as an online load leaves it), so a
machine without the network reads what is already there.

SPLIT is the evaluation split (default: validation, else test, else train); the training split
(learned matching, `--split train`) is `train` when the data set has one besides it, else a fixed
share of the evaluation split. Text: the `text` column (else the only string column), rows joined
by newlines, scored as the model reads it (symalign.data.text.AnyText). Images: the image column
and the `label` column (or `labels`, `fine_label`), scaled to [−1, 1]."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import numpy as np
import torch

from symalign.data.text import AnyText, SplitText
from symalign.errors import SymalignError
from symalign.hub_cache import hub_cache_dir, offline

SPEC = re.compile(r"^(?P<name>[^:@]+)(?::(?P<config>[^@]+))?(?:@(?P<split>.+))?$")
EVAL_SPLITS = ("validation", "test", "train")
LABEL_COLUMNS = ("label", "labels", "fine_label")
IMAGE_EVAL_FRACTION = 0.2


def parse(rest: str) -> tuple[str, str | None, str | None]:
    m = SPEC.match(rest.strip())
    if not m:
        raise SymalignError(f"data spec hf:{rest}: write hf:NAME[:CONFIG][@SPLIT], as in "
                            "hf:wikitext:wikitext-2-raw-v1@validation")
    return m["name"], m["config"], m["split"]


def _brief(exc: Exception) -> str:
    return " ".join(str(exc).split())[:240]


def _check_reachable(name: str) -> None:
    """One quick request before `datasets`, whose loader retries for about 30 s when the hub cannot be reached
    (five backoffs, a warning line each) before it fails; this request fails at once (0.4 s here, no route)."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, RepositoryNotFoundError

    try:
        HfApi().dataset_info(name, timeout=20)
    except GatedRepoError:
        return  # it exists; `datasets` says what access it needs
    except RepositoryNotFoundError:
        raise SymalignError(f"hf:{name}: no data set of that name on the hub (or it needs a token)") from None
    except HfHubHTTPError:
        return  # the hub answered: `datasets` makes of it what it can
    except Exception as exc:  # no route, DNS, timeout: network errors take many types
        raise SymalignError(f"hf:{name}: the hub could not be reached ({_brief(exc)}); with HF_HUB_OFFLINE=1 a "
                            f"data set in the hub cache ({hub_cache_dir()}) loads without it") from None


def _load(name: str, config: str | None):
    """Every split of the data set (a DatasetDict): downloaded through `datasets` when online; with
    HF_HUB_OFFLINE=1 (read now, as symalign.models.hub does), its snapshot in the hub cache."""
    import datasets
    from huggingface_hub import snapshot_download

    datasets.disable_progress_bars()
    datasets.logging.set_verbosity_error()
    source = name
    if offline():
        try:
            source = snapshot_download(name, repo_type="dataset", cache_dir=hub_cache_dir(), local_files_only=True)
        except Exception:
            raise SymalignError(f"hf:{name}: no data set of that name in the hub cache ({hub_cache_dir()}), and "
                                "HF_HUB_OFFLINE=1 forbids downloading it") from None
    elif not Path(name).expanduser().is_dir():  # a local folder `datasets` reads needs no hub
        _check_reachable(name)
    hub_log = logging.getLogger("huggingface_hub")  # its retry warnings ("... thrown while requesting HEAD ...")
    level = hub_log.level  # printed a line of their own above the error line that says why
    hub_log.setLevel(logging.ERROR)
    try:
        return datasets.load_dataset(source, config)
    except ValueError as exc:  # an unknown config: datasets names the ones there are
        raise SymalignError(f"hf:{name}: {_brief(exc)}") from None
    except Exception as exc:  # not on the hub, gated, no network
        raise SymalignError(f"hf:{name}: could not load it ({_brief(exc)})") from None
    finally:
        hub_log.setLevel(level)


def hub_data(rest: str):
    """The data source `hf:REST` names: images, labelled sentences (a label column beside text: for
    sequence classifiers; `?text=...&text_pair=...&label=...` names the columns), or text."""
    from symalign.data.labelled import columns_of

    spec, columns = columns_of(rest)
    name, config, split = parse(spec)
    splits = _load(name, config)
    if split is not None and split not in splits:
        raise SymalignError(f"hf:{rest}: no split {split!r}; it has {', '.join(splits)}")
    split = split or next(s for s in (*EVAL_SPLITS, *splits) if s in splits)
    train = "train" if "train" in splits and split != "train" else None
    evaluation = splits[split]
    images = [c for c, f in evaluation.features.items() if type(f).__name__ == "Image"]
    if images:
        return _images(f"hf:{rest}", evaluation, splits[train] if train else None, images[0])
    if columns.get("label") or any(c in evaluation.column_names for c in LABEL_COLUMNS):
        return _labelled(f"hf:{rest}", evaluation, splits[train] if train else None, columns)
    return _text(f"hf:{rest}", evaluation, splits[train] if train else None)


def _labelled(name: str, evaluation, train, columns: dict):
    from symalign.data.labelled import LabelledText, rows_from_records, split_rows

    rows = rows_from_records(evaluation.to_list(), columns, name)
    if train is None:
        train_rows, rows = split_rows(rows)
    else:
        train_rows = rows_from_records(train.to_list(), columns, name)
    return LabelledText(name, train_rows, rows)


def _text_column(ds, name: str) -> str:
    if "text" in ds.column_names:
        return "text"
    strings = [c for c, f in ds.features.items() if getattr(f, "dtype", None) in ("string", "large_string")]
    if len(strings) != 1:
        raise SymalignError(f"{name}: no `text` column to read (columns: {', '.join(ds.column_names)})")
    return strings[0]


def _text(name: str, evaluation, train) -> AnyText:
    column = _text_column(evaluation, name)
    text = "\n".join(evaluation[column])
    if train is None:
        return AnyText(name, text)
    return SplitText(name, text, train_text="\n".join(train[_text_column(train, name)]))


def _images(name: str, evaluation, train, column: str):
    from symalign.data.base import ImageData

    label = next((c for c in LABEL_COLUMNS if c in evaluation.column_names), None)
    if label is None:
        raise SymalignError(f"{name}: images but no label column ({' or '.join(LABEL_COLUMNS)}; columns: "
                            f"{', '.join(evaluation.column_names)})")
    feature = evaluation.features[label]
    classes = getattr(feature, "num_classes", None) or int(max(evaluation[label])) + 1
    ex, ey = _image_tensors(evaluation, column, label)
    if train is not None:
        tx, ty = _image_tensors(train, column, label)
    else:  # one split: a fixed share evaluates
        order = torch.from_numpy(np.random.RandomState(0).permutation(len(ey)))
        cut = int(len(ey) * (1 - IMAGE_EVAL_FRACTION))
        ex, ey, tx, ty = ex[order[cut:]], ey[order[cut:]], ex[order[:cut]], ey[order[:cut]]
    return ImageData(name, tx, ty, ex, ey, classes)


def _image_tensors(ds, column: str, label: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Images as floats in [−1, 1] (one channel for grey images, else RGB), all at the first one's size."""
    pictures = ds[column]
    grey = all(p.mode in ("L", "1", "I;16") for p in pictures)
    size = pictures[0].size
    arrays = [np.asarray(p.convert("L" if grey else "RGB").resize(size), dtype=np.float32) for p in pictures]
    x = torch.from_numpy(np.stack(arrays)) / 255.0 * 2 - 1
    x = x[:, None] if grey else x.permute(0, 3, 1, 2)
    return x.contiguous(), torch.tensor(ds[label], dtype=torch.long)
