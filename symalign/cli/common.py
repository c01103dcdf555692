"""What the commands share: flags that several take, the class and config parsing, the progress
bar, the run store. A command's own flags live beside its handler in its group's module."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Callable

from symalign.errors import SymalignError
from symalign.match.config import CLASS_PRESETS, preset_classes
from symalign.match.matchers import matcher, method_names
from symalign.symmetry.spec import CLASSES, KINDS


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2))


def at_least(minimum: int, at_most: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer of at least `minimum` (and at most `at_most`). A count of 0 evaluation examples
    used to reach the loss's division (a ZeroDivisionError traceback from `barrier --max-examples 0`); refused
    while parsing, it costs the user one line and no model load."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"takes an integer; got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}; got {value}")
        if at_most is not None and value > at_most:
            raise argparse.ArgumentTypeError(f"must be at most {at_most}; got {value}")
        return value

    parse.__name__ = "integer"  # argparse names the type in its own messages
    return parse


def add_max_examples_flag(p: argparse.ArgumentParser, help: str = "evaluation examples (default: all)") -> None:
    """--max-examples, as every command that evaluates takes it: leave it out for all, at least 1 when given."""
    p.add_argument("--max-examples", type=at_least(1), default=None, metavar="N", help=help)


def parse_classes(args) -> dict[str, str]:
    """Per-kind classes from --classes (a preset name, or kind=class pairs) and the per-kind flags (flags win)."""
    classes: dict[str, str] = {}
    if (args.classes or "").strip() in CLASS_PRESETS:
        classes = preset_classes(args.classes.strip())
        args = argparse.Namespace(**{**vars(args), "classes": ""})
    for item in filter(None, (args.classes or "").split(",")):
        kind, sep, cls = item.partition("=")
        if not sep:
            raise SymalignError(f"--classes takes a preset ({', '.join(CLASS_PRESETS)}) or kind=class pairs such as "
                                f"mlp=perm,qk=orthogonal; got {item!r}")
        classes[kind.strip()] = cls.strip()
    for kind in KINDS:
        if getattr(args, kind, None):
            classes[kind] = getattr(args, kind)
    return classes


def add_dtype_flag(p: argparse.ArgumentParser) -> None:
    from symalign.match.config import EXPORT_DTYPES

    p.add_argument("--dtype", default="auto", choices=EXPORT_DTYPES,
                   help="precision of the written checkpoint (auto: the input's, so bf16 in is bf16 out)")


def add_class_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--classes", help=f"a preset ({', '.join(CLASS_PRESETS)}) or kind=class pairs, "
                                     "e.g. mlp=perm,heads=perm,qk=orthogonal")
    for kind in KINDS:
        p.add_argument(f"--{kind}", choices=("none",) + CLASSES, help=f"class for {kind} components")


def add_split_flag(p: argparse.ArgumentParser) -> None:
    from symalign.data.splits import SPLITS

    p.add_argument("--split", choices=SPLITS, default="eval",
                   help="measure on the evaluation split, or the training split (the data the pair learned from)")


def add_option_flags(p: argparse.ArgumentParser, universe: bool) -> None:
    """The matchers' options as flags, from their declarations (symalign.match.options): an option a
    matcher declares is a flag here with no other edit. `universe`: align-many and simplex. A flag the
    command already has (merge's and transport's --max-examples: their evaluation and OT examples)
    keeps the command's meaning and also reaches the matcher."""
    from symalign.match.matchers import all_options

    for o in all_options(universe=universe).values():
        if o.flag in p._option_string_actions:
            continue
        if o.kind is bool:
            p.add_argument(o.flag, dest=o.name, action="store_const", const=not o.default, default=None, help=o.help)
            continue
        p.add_argument(o.flag, type=o.kind, default=None, choices=o.choices, help=o.help_line)


LAYERS_HELP = ("transform only these blocks (0-2, 3, -1, 1:, :-1, 0,2), or per component kind ('mlp=0-1;heads=-1': "
               "kinds not named use every block); the others stay as they are, and a preset drops the residual map "
               "(it would move every block)")


def add_alignment_flags(p: argparse.ArgumentParser, universe: bool = False) -> None:
    """Everything that says how a pair is aligned, one set for every command that aligns (align, merge,
    transport): classes per component kind, the blocks, and the matchers' declared options."""
    add_class_flags(p)
    p.add_argument("--layers", default=None, metavar="BLOCKS", help=LAYERS_HELP)
    add_option_flags(p, universe=universe)


def alignment_given(args, own: tuple[str, ...] = ()) -> list[str]:
    """The alignment flags a command line set (classes, blocks, options), as flags; `own`: option names
    the command defines for itself (they do not count)."""
    from symalign.match.matchers import all_options

    given = [f"--{kind}" for kind in ("classes", *KINDS) if getattr(args, kind, None)]
    given += ["--layers"] * bool(getattr(args, "layers", None))
    return given + [o.flag for name, o in all_options().items()
                    if name not in own and getattr(args, name, None) is not None]


def add_universe_flags(p: argparse.ArgumentParser, default_method: str) -> None:
    """Models, method and classes of a universe alignment (align-many, simplex)."""
    p.add_argument("models", nargs="+", metavar="MODEL")
    p.add_argument("--method", default=default_method, choices=method_names(universe=True))
    add_class_flags(p)
    add_option_flags(p, universe=True)


def add_model_output_flags(p: argparse.ArgumentParser) -> None:
    """The flags of a workflow that evaluates and writes one model (merge, transport)."""
    add_max_examples_flag(p)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto (CUDA, then MPS, then CPU), cpu, cuda or mps")
    p.add_argument("--out", required=True)
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")


COLUMN_FLAGS = {"text_column": "text", "text_pair_column": "text_pair", "label_column": "label"}


def add_data_flag(p: argparse.ArgumentParser, data_help: str | None = None) -> None:
    """--data, and the columns of labelled text (csv/tsv/jsonl, hub data sets) by name: they are folded
    into the spec (`csv:PATH?text=...`) by `fold_columns`, so runs record one spec that says it all."""
    p.add_argument("--data", default=None, help=data_help)
    for dest, key in COLUMN_FLAGS.items():
        p.add_argument("--" + dest.replace("_", "-"), dest=dest, default=None, metavar="COLUMN",
                       help=f"labelled text: the {key} column (the same as ?{key}=COLUMN in the data spec)")


def fold_columns(args) -> None:
    """--text-column and friends into --data's spec (`csv:PATH?text=COLUMN`); without --data, one line."""
    given = {key: getattr(args, dest) for dest, key in COLUMN_FLAGS.items() if getattr(args, dest, None)}
    if not given:
        return
    if not getattr(args, "data", None):
        raise SymalignError(f"--{next(iter(given))}-column names a column of --data; give --data csv:PATH (or "
                            "tsv:, jsonl:, hf:)")
    from urllib.parse import urlencode

    args.data += ("&" if "?" in args.data else "?") + urlencode(given)


def add_run_flags(p: argparse.ArgumentParser, data_help: str) -> None:
    """The flags every recorded multi-model workflow takes."""
    add_data_flag(p, data_help)
    p.add_argument("--device", default="auto")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-record", action="store_true", help="do not record the run in the run history")
    p.add_argument("--json", action="store_true")


LOG_EVERY_SECONDS = 30.0  # a log (not a terminal) gets one progress line at most this often


class Bar:
    """Progress on stderr, opened at the first report so that errors print alone. On a terminal: a tqdm bar
    with an ETA; a new phase or a new total (weight matching, then the curve) starts a fresh bar named after
    the phase. Elsewhere (a log file, a job, `nohup`, a cluster): one plain line at most every
    LOG_EVERY_SECONDS (`SYMALIGN_PROGRESS_SECONDS` overrides it), saying what the command is on, how far it
    is and about how long is left, so a long run is never silent; a run shorter than that prints none."""

    def __init__(self, desc: str):
        self.desc, self.bar, self.phase = desc, None, None
        self.terminal = sys.stderr.isatty()
        self.every = float(os.environ.get("SYMALIGN_PROGRESS_SECONDS", LOG_EVERY_SECONDS))
        self.began = self.logged = time.monotonic()
        self.phase_began, self.phase_total = self.began, None
        # a log hears from a step that reports nothing for longer (a billion-parameter sweep's last assignment
        # solves took 3 minutes): the last report is repeated, marked as such, by a thread
        self.last: tuple | None = None
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.heartbeat: threading.Thread | None = None

    def __call__(self, done: int, total: int, loss: float | None = None, phase: str | None = None,
                 note: str | None = None) -> None:
        if not self.terminal:
            return self._log(done, total, loss, phase, note)
        if self.bar is not None and (phase != self.phase or total != self.bar.total):
            self.bar.close()
            self.bar = None
        if self.bar is None:
            from tqdm import tqdm

            self.phase = phase
            desc = self.desc if phase is None else f"{self.desc}: {phase}"
            self.bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, dynamic_ncols=True)
        self.bar.n = done
        if loss is not None:
            self.bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
        if note:
            self.bar.set_postfix_str(note, refresh=False)
        self.bar.refresh()

    def _log(self, done: int, total: int, loss: float | None, phase: str | None, note: str | None) -> None:
        """One line for a log, at most every `self.every` seconds: the phase, done/total, the time so far and
        an estimate of what is left in this phase (its rate so far)."""
        now = time.monotonic()
        with self.lock:
            if phase != self.phase or total != self.phase_total:
                self.phase, self.phase_total, self.phase_began = phase, total, now
            self.last = (done, total, loss, phase, note, now)
            if self.heartbeat is None:
                self.heartbeat = threading.Thread(target=self._beat, daemon=True, name="progress-log")
                self.heartbeat.start()
            if now - self.logged < self.every:
                return
            self._line(done, total, loss, phase, note, now)

    def _beat(self) -> None:
        """Every `self.every` seconds without a line, the last report again, with how long ago it came."""
        while not self.stopped.wait(self.every / 2):
            with self.lock:
                now = time.monotonic()
                if self.last is not None and now - self.logged >= self.every:
                    done, total, loss, phase, note, at = self.last
                    quiet = f"still on it, last report {format_seconds(now - at)} ago"
                    self._line(done, total, loss, phase, f"{note}; {quiet}" if note else quiet, now)

    def _line(self, done: int, total: int, loss: float | None, phase: str | None, note: str | None,
              now: float) -> None:
        self.logged = now
        spent = now - self.phase_began
        left = (f", about {format_seconds(spent / done * (total - done))} left" if 0 < done < total and spent > 0
                else "")
        what = self.desc if phase is None else f"{self.desc}: {phase}"
        extra = "".join(f"; {x}" for x in ((f"loss {loss:.3f}" if loss is not None else None), note) if x)
        print(f"[{time.strftime('%H:%M:%S')}] {what} {done}/{total}"
              + (f" ({100 * done / total:.0f}%)" if total else "")
              + f", {format_seconds(now - self.began)} in{left}{extra}", file=sys.stderr, flush=True)

    def phases(self, phase: str, done: int, total: int, *rest) -> None:
        """The (phase, done, total[, loss or note]) callback the recorded workflows take."""
        loss = next((r for r in rest if isinstance(r, float)), None)
        note = next((r for r in rest if isinstance(r, str)), None)
        self(done, total, loss, phase=phase, note=note)

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, *exc) -> None:
        self.stopped.set()
        if self.heartbeat is not None:
            self.heartbeat.join()
        if self.bar is not None:
            self.bar.close()


def format_seconds(seconds: float) -> str:
    """"45 s", "12 min", "1.5 h": what a log line says of a duration."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def store_for(args):
    """The run database, unless --no-record."""
    from symalign.runs import RunStore

    return None if args.no_record else RunStore()


def align_config(args, data: str | None = None, method: str | None = None, default_preset: str | None = None,
                 own: tuple[str, ...] = ()):
    """The AlignConfig the alignment flags describe (align, align-many, simplex; merge and transport,
    whose `--align` names the method). `default_preset`: the classes when no class flag is given
    (merge and transport align with all classes unless told otherwise); `own`: option names whose
    flags the command defines with its own meaning (transport's --alpha), which the matcher does not read."""
    from symalign.match.config import AlignConfig
    from symalign.match.matchers import all_options

    names = [n for n in (*all_options(), "dtype", "layers") if n not in own]  # options, and what every method takes
    given = {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}
    classes, preset = parse_classes(args), preset_of(args)
    if not classes and preset is None:
        preset = default_preset
    return AlignConfig.from_options(given, method=method or args.method, classes=classes,
                                    data=data or getattr(args, "data", None), device=args.device, seed=args.seed,
                                    preset=preset)


def preset_of(args) -> str | None:
    """The preset named by --classes when no per-kind flag changes it: fitted to the model's spec
    (e.g. `all` on a RoPE model uses rotary QK maps), where classes named one by one are not."""
    from symalign.match.config import CLASS_PRESETS

    name = (args.classes or "").strip()
    if name in CLASS_PRESETS and not any(getattr(args, kind, None) for kind in KINDS):
        return name
    return None


def data_for(args, refs: list[str]) -> str | None:
    """--data, else (for a method that learns on data) the first model's own training data."""
    if args.data or not matcher(args.method).needs_data:
        return args.data
    from symalign.models import load_model
    from symalign.models.io import default_data_spec

    return default_data_spec(load_model(refs[0]))


OUTPUT_FLAGS = {"out": "--out", "canonical_a": "--canonical-a"}  # the folders commands write
INPUT_FIELDS = ("a", "b", "a_ft", "model", "models")  # the model references commands read


def check_outputs(args) -> None:
    """Every folder the command will write, checked before it reads or computes anything (symalign.output_folder)."""
    from symalign.output_folder import check_output_folder

    inputs = []
    for name in INPUT_FIELDS:
        value = getattr(args, name, None)
        inputs += [value] if isinstance(value, str) else list(value or ())
    for name, flag in OUTPUT_FLAGS.items():
        if getattr(args, name, None):
            check_output_folder(getattr(args, name), flag, inputs)


def check_html(path: str | None) -> None:
    """Refuse an --html target that cannot be written before any work is done."""
    from pathlib import Path

    if path and not Path(path).expanduser().resolve().parent.is_dir():
        raise SymalignError(f"--html {path}: the folder {Path(path).expanduser().parent} does not exist")
