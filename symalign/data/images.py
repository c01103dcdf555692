"""Image sources: scikit-learn's bundled digits, CIFAR folders and image folders (torchvision,
never downloading). Splits are fixed so every evaluation in the project sees the same images."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from symalign.data.base import ImageData
from symalign.errors import SymalignError

CIFAR_LAYOUT = {
    "cifar10": ("cifar-10-batches-py", "data_batch_1 … data_batch_5, test_batch, batches.meta", 10),
    "cifar100": ("cifar-100-python", "train, test, meta", 100),
}
CIFAR_MEAN = torch.tensor([0.4914, 0.4822, 0.4465])[:, None, None]
CIFAR_STD = torch.tensor([0.2470, 0.2435, 0.2616])[:, None, None]


def digits_arrays() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's digits (images [1797, 8, 8], targets), read from the file scikit-learn ships, as its
    `load_digits` reads it (`np.loadtxt` of digits.csv.gz). Importing sklearn.datasets costs 2-2.5 s on a
    2-core machine, paid by every process that evaluates a ViT on digits (job workers, app servers, the CLI):
    far more than the data. Where the file is not where scikit-learn keeps it, `load_digits` itself."""
    import gzip
    from importlib.util import find_spec

    spec = find_spec("sklearn")  # finds the package without importing it
    shipped = Path(spec.origin).parent / "datasets" / "data" / "digits.csv.gz" if spec and spec.origin else None
    if shipped is not None and shipped.is_file():
        with gzip.open(shipped, "rt", encoding="utf-8") as f:
            data = np.loadtxt(f, delimiter=",")
        return data[:, :-1].reshape(-1, 8, 8), data[:, -1].astype(int)
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return bunch.images, bunch.target


def digits() -> ImageData:
    """8×8 digits scaled to [−1, 1]; a fixed shuffle (seed 0), 80% train, the last 20% evaluation."""
    images, target = digits_arrays()
    x = torch.tensor(images, dtype=torch.float32)[:, None] / 8.0 - 1.0
    y = torch.tensor(target, dtype=torch.long)
    order = torch.from_numpy(np.random.RandomState(0).permutation(len(y)))
    x, y = x[order], y[order]
    cut = int(0.8 * len(y))
    return ImageData("digits", x[:cut], y[:cut], x[cut:], y[cut:], 10)


def digits_flipped() -> ImageData:
    """The same digits and split, mirrored left to right: a task the digits models were not trained
    on, for fine-tuning and task-vector transport (a flipped 2 is not a 2 the model has seen)."""
    base = digits()
    return ImageData("digits-flipped", base.train_x.flip(-1), base.train_y, base.eval_x.flip(-1), base.eval_y, 10)


def cifar(kind: str, path: str) -> ImageData:
    """The standard python-pickle CIFAR folders: PATH is the folder itself or its parent."""
    from torchvision import datasets

    folder, files, classes = CIFAR_LAYOUT[kind]
    root = Path(path).expanduser()
    if root.name == folder:
        root = root.parent
    if not (root / folder).is_dir():
        raise SymalignError(f"{kind}:{path}: expected the folder {root / folder} holding {files} "
                            f"(the python version from the CIFAR page); it is missing")
    cls = datasets.CIFAR10 if kind == "cifar10" else datasets.CIFAR100
    try:
        train = cls(str(root), train=True, download=False)
        test = cls(str(root), train=False, download=False)
    except Exception as exc:  # torchvision raises RuntimeError or pickle errors for a broken folder
        raise SymalignError(f"{kind}:{path}: the folder {root / folder} is incomplete or corrupt ({exc})") from None

    def tensors(ds):
        x = torch.from_numpy(ds.data).permute(0, 3, 1, 2).float() / 255.0
        return (x - CIFAR_MEAN) / CIFAR_STD, torch.tensor(ds.targets, dtype=torch.long)

    (tx, ty), (ex, ey) = tensors(train), tensors(test)
    return ImageData(f"{kind}:{path}", tx, ty, ex, ey, classes, pixel_mean=tuple(CIFAR_MEAN.flatten().tolist()),
                     pixel_std=tuple(CIFAR_STD.flatten().tolist()))


FASHION_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte")
FASHION_MEAN, FASHION_STD = 0.2860, 0.3530  # the training images' pixel statistics (in [0, 1])


def _idx(path: Path) -> np.ndarray:
    """An IDX file (MNIST's format: a magic number whose last byte is the rank, then big-endian sizes, then
    unsigned bytes), gzipped or not."""
    import gzip

    try:
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as exc:  # a truncated or mislabelled download
        raise SymalignError(f"{path}: cannot be read as an IDX file ({exc})") from None
    if len(raw) < 4:
        raise SymalignError(f"{path}: too short for an IDX file")
    rank = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(rank))
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * rank)
    if raw[2] != 0x08 or data.size != int(np.prod(shape)):
        raise SymalignError(f"{path}: not an IDX file of unsigned bytes of shape {shape}")
    return data.reshape(shape)


def fashion_mnist(path: str) -> ImageData:
    """Fashion-MNIST from the folder holding its four IDX files, gzipped or not (Debian's
    `dataset-fashion-mnist` package installs them in /usr/share/datasets/fashion-mnist): 28×28 grey,
    normalised by the training set's statistics; the 60,000 training images train, the 10,000 test
    images evaluate."""
    root = Path(path).expanduser()
    found = {}
    for name in FASHION_FILES:
        candidates = [root / f"{name}.gz", root / name]
        found[name] = next((c for c in candidates if c.is_file()), None)
        if found[name] is None:
            raise SymalignError(f"fashion-mnist:{path}: {name}(.gz) is missing from {root} (expected the four "
                                f"files {', '.join(FASHION_FILES)}, as `apt-get install dataset-fashion-mnist` "
                                "puts them in /usr/share/datasets/fashion-mnist)")

    def images(name: str) -> torch.Tensor:
        x = torch.from_numpy(_idx(found[name]).copy()).float()[:, None] / 255.0
        return (x - FASHION_MEAN) / FASHION_STD

    def labels(name: str) -> torch.Tensor:
        return torch.from_numpy(_idx(found[name]).astype(np.int64))

    return ImageData(f"fashion-mnist:{path}", images(FASHION_FILES[0]), labels(FASHION_FILES[1]),
                     images(FASHION_FILES[2]), labels(FASHION_FILES[3]), 10, pixel_mean=(FASHION_MEAN,),
                     pixel_std=(FASHION_STD,))


def cifar_augment(generator: torch.Generator):
    """Random crop (pad 4) + horizontal flip + colour jitter, as in the paper recipes."""
    from torchvision.transforms import v2

    pipeline = v2.Compose([v2.RandomCrop(32, padding=4), v2.RandomHorizontalFlip(), v2.ColorJitter(0.2, 0.2, 0.2)])

    def augment(x: torch.Tensor) -> torch.Tensor:
        return torch.stack([pipeline(img) for img in x])

    return augment


def gaussian_noise(sigma: float, generator: torch.Generator):
    """Input noise for the learned matcher's training batches, drawn from the matcher's own generator
    (so a seed gives one result); a regulariser against fitting the transform to the training images."""

    def augment(x: torch.Tensor) -> torch.Tensor:
        return x + sigma * torch.randn(x.shape, generator=generator, dtype=x.dtype)

    return augment


def imagefolder(path: str, image_size: int = 32) -> ImageData:
    """An ImageFolder tree; PATH/train and PATH/val (or test) when present, else a fixed 90/10 split."""
    from torchvision import datasets
    from torchvision.transforms import v2

    root = Path(path).expanduser()
    if not root.is_dir():
        raise SymalignError(f"imagefolder:{path}: no such folder (expected class sub-folders of images)")
    tf = v2.Compose([v2.Resize((image_size, image_size)), v2.ToImage(), v2.ToDtype(torch.float32, scale=True),
                     v2.Normalize([0.5] * 3, [0.5] * 3)])

    def load(folder: Path):
        try:
            ds = datasets.ImageFolder(str(folder), transform=tf)
        except (FileNotFoundError, RuntimeError) as exc:
            raise SymalignError(f"imagefolder:{path}: {exc}") from None
        xs, ys = zip(*[ds[i] for i in range(len(ds))])
        return torch.stack(xs), torch.tensor(ys), len(ds.classes)

    val = next((root / n for n in ("val", "test") if (root / n).is_dir()), None)
    if (root / "train").is_dir() and val is not None:
        (tx, ty, k), (ex, ey, _) = load(root / "train"), load(val)
    else:
        x, y, k = load(root)
        order = torch.from_numpy(np.random.RandomState(0).permutation(len(y)))
        cut = int(0.9 * len(y))
        tx, ty, ex, ey = x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]
    return ImageData(f"imagefolder:{path}", tx, ty, ex, ey, k)
