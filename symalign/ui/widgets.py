"""Widgets the pages share: model pickers, the symmetry toggle grid, progress, error display."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import streamlit as st

from symalign.device import describe_devices
from symalign.errors import SymalignError, os_error_line
from symalign.match.config import CLASS_PRESETS, PRESET_HELP, preset_classes
from symalign.symmetry.spec import CLASSES, KINDS, SymmetrySpec
from symalign.ui.access import Access
from symalign.ui.shared_task import SharedTask
from symalign.workspace import home

KIND_LABELS = {"mlp": "MLP units", "heads": "attention heads", "qk": "inside heads: QK",
               "vo": "inside heads: VO", "residual": "residual stream", "experts": "experts (with router rows)"}
CLASS_LABELS = {"perm": "permutation", "scaled_perm": "scaled permutation", "orthogonal": "orthogonal",
                "invertible": "invertible", "rescale": "QK rescaling", "rotary": "rotary (per frequency pair)",
                "orthogonal+rescale": "orthogonal + rescaling"}
# The grid's column headers: short enough not to break mid-word in a ninth of a 1280-pixel page (issue #70:
# "permutati/on"); the full name is the header's tooltip and each box's label.
CLASS_HEADERS = {"perm": "perm.", "scaled_perm": "scaled perm.", "orthogonal": "orth.", "invertible": "GL (inv.)",
                 "rescale": "QK rescale", "rotary": "rotary", "orthogonal+rescale": "orth. + rescale"}
PRESETS = CLASS_PRESETS


@contextmanager
def user_errors() -> Iterator[None]:
    """A user error becomes one red line; anything else a short message with details folded away."""
    try:
        yield
    except SymalignError as exc:
        st.error(" ".join(str(exc).split()))
    except OSError as exc:  # the machine said no (a full disk, a read-only data folder): not a bug of symalign
        st.error(f"The system refused: {os_error_line(exc)}.")
    except Exception as exc:  # a bug: say so plainly, keep the details out of the way
        st.error(f"symalign hit an internal error ({type(exc).__name__}: {exc}). Your runs and models are safe.")
        with st.expander("details for a bug report"):
            st.exception(exc)


# A markdown table wider than its column (a paper's printed table) scrolls inside its own box instead of
# pushing the whole page sideways (issue #109: Theus's Table 1 was 1,037 px in an 820 px column).
WIDE_TABLES_STYLE = ("<style>[data-testid='stMarkdownContainer'] table {display: block; max-width: 100%; "
                     "overflow-x: auto;}</style>")


def every_metric_table(key: str):
    """A container for a table that lists every metric (Run history, Compare, a grid's every cell): it may
    scroll sideways inside its own box, its key columns first; every other table fits a 1280-pixel page
    (the layout test knows these by their `every-metric-` key)."""
    return st.container(key=f"every-metric-{key}")


def sidebar():
    """The sidebar's captions; returns the slot `show_devices` fills once the page has painted."""
    from symalign.ui.figures import view_settings

    with st.sidebar:
        st.html(WIDE_TABLES_STYLE)  # style only: Streamlit injects it into the page
        st.caption("View")
        view_settings()
        st.caption("Compute")
        slot = st.empty()
        if not Access.from_environment().guest:  # a shared app's guests never see a host path (issue #70)
            st.caption(f"Data folder: `{home()}` (runs, uploads; set SYMALIGN_HOME to move it)")
    return slot


def show_devices(slot) -> None:
    """The compute device in the sidebar. Asking needs torch (1.5 s to import), so app.py calls
    this after the page: Home paints first."""
    info = describe_devices()
    if info["cuda"]:
        slot.success(f"CUDA: {info['cuda_name']} (used by default)")
    elif info["mps"]:
        slot.success("Apple MPS (used by default)")
    else:
        slot.info("CPU only: the zoo models are sized for it")


def resume_once() -> bool:
    """Once per app process and data folder: jobs queued before a restart get a worker."""
    return _resume(str(home()))


@st.cache_resource
def _resume(folder: str) -> bool:
    from symalign.jobs.queue import resume_jobs

    return resume_jobs()


def device_choice(key: str) -> str:
    info = describe_devices()
    options = ["auto", "cpu"] + (["cuda"] if info["cuda"] else []) + (["mps"] if info["mps"] else [])
    return st.selectbox("device", options, key=key, help="auto = CUDA, then MPS, then CPU")


def model_picker(label: str, key: str, default_index: int = 0, default_ref: str | None = None) -> str:
    """Pick a model reference: the zoo, your models, linked folders and hub ids, or a typed directory
    path or hub id (the host only: a guest of a shared app picks from the list and their uploads).
    `default_ref` (when present) is preselected, else the entry at `default_index`."""
    from symalign.ui.session import access, offered_models

    entries = offered_models()
    guest = access().guest
    labels = [label_ for label_, _ in entries] + ([] if guest else ["a local directory or hub id…"])
    refs = [ref for _, ref in entries]
    index = refs.index(default_ref) if default_ref in refs else min(default_index, len(labels) - 1)
    choice = st.selectbox(label, labels, index=index, key=key)
    if not guest and choice == labels[-1]:
        return st.text_input(f"{label}: directory path or hub id (org/name[@revision])", key=f"{key}-path").strip()
    return refs[labels.index(choice)]  # from the offered list (cached_model checks what a guest loads again)


def data_field(container, label: str, default: str, key: str,
               help: str = "digits, shakespeare, cifar10:PATH, imagefolder:PATH, text:PATH") -> str:
    """The data a run evaluates on: any spec for the host; one of the named data sets for a guest of a
    shared app (a spec with a path would read the host's files)."""
    from symalign.ui.access import NAMED_DATA
    from symalign.ui.session import access

    if not access().guest:
        return container.text_input(label, default, key=key, help=help)
    options = list(NAMED_DATA)
    return container.selectbox(label, options, index=options.index(default) if default in options else 0, key=key,
                               help="the shipped data sets (this app is shared: paths on the host are not offered)")


def _toggle_key(kind: str, cls: str, prefix: str = "") -> str:
    return f"{prefix}toggle:{kind}:{cls}"


def _exclusive(kind: str, cls: str, prefix: str = "") -> None:
    """One class per component kind: checking one clears the others of its row."""
    if st.session_state.get(_toggle_key(kind, cls, prefix)):
        for other in CLASSES:
            if other != cls:
                st.session_state[_toggle_key(kind, other, prefix)] = False


def apply_preset(name: str, spec: SymmetrySpec, prefix: str = "") -> None:
    chosen = spec.with_experts(spec.fit(preset_classes(name)))  # e.g. RoPE: rotary QK maps for `all`
    for kind in KINDS:
        for cls in CLASSES:
            key = _toggle_key(kind, cls, prefix)
            st.session_state[key] = chosen.get(kind) == cls and spec.kind_refusals(kind).get(cls) is None


# A disabled box (a class the spec refuses) drawn hatched and faint, so it does not read as "off".
DISABLED_STYLE = ("<style>div[data-testid='stCheckbox'][data-disabled='true'] label > span + div {"
                  "background: repeating-linear-gradient(45deg, #c8c8c8 0 2px, #f4f4f4 2px 5px) !important;"
                  "border: 1px dashed #999 !important; opacity: 0.7;}</style>")


def toggle_grid(spec: SymmetrySpec, default: str = "permutations", prefix: str = "",
                blocks: bool = False) -> dict[str, str]:
    """One row per component kind, one checkbox per class; inadmissible classes are disabled and
    their tooltip gives the spec's reason. Returns kind -> chosen class ('none' if unchecked).
    `prefix` keeps the grids of different pages apart; `default` is the preset shown first.
    `blocks`: a last column of block ranges per per-block kind (read back with `chosen_layers`)."""
    if not any(_toggle_key("mlp", c, prefix) in st.session_state for c in CLASSES):
        apply_preset(default, spec, prefix)
    cols = st.columns(len(PRESETS))
    for col, name in zip(cols, PRESETS):
        col.button(f"preset: {name}", key=f"{prefix}preset:{name}", on_click=apply_preset, args=(name, spec, prefix),
                   width="stretch", help=PRESET_HELP.get(name))
    widths = [2] + [1] * len(CLASSES) + ([1.5] if blocks else [])
    header = st.columns(widths)
    header[0].markdown("**component**")
    for col, cls in zip(header[1:], CLASSES):
        col.markdown(f"**{CLASS_HEADERS.get(cls, CLASS_LABELS[cls])}**", help=CLASS_LABELS[cls])
    if blocks:
        header[-1].markdown("**blocks**", help="which blocks this component may be matched in (0-2, -1, 1:, 0,2); "
                                               "empty: every block. The others stay as they are (Zhang et al.'s "
                                               "layer subsets); the residual map moves every block, so it is "
                                               "dropped when any range is given")
    chosen: dict[str, str] = {}
    reasons: list[str] = []
    for kind in KINDS:
        if kind not in spec.kinds():  # a component this architecture does not have (experts, outside a MoE)
            continue
        refusals = spec.kind_refusals(kind)
        row = st.columns(widths)
        spaces = spec.spaces_of_kind(kind)
        size = f" ({len(spaces)} × {spaces[0].size})" if spaces else ""
        row[0].markdown(f"{KIND_LABELS[kind]}{size}")
        chosen[kind] = "none"
        for col, cls in zip(row[1:], CLASSES):
            key = _toggle_key(kind, cls, prefix)
            reason = refusals.get(cls)
            if reason is not None:
                st.session_state[key] = False
                reasons.append(f"{KIND_LABELS[kind]} · {CLASS_LABELS[cls]}: {reason}")
            col.checkbox(CLASS_LABELS[cls], key=key, disabled=reason is not None, label_visibility="collapsed",
                         help=(f"not admissible: {reason}" if reason
                               else f"use {CLASS_LABELS[cls]} on {KIND_LABELS[kind]}"),
                         on_change=_exclusive, args=(kind, cls, prefix))
            if st.session_state.get(key):
                chosen[kind] = cls
        if blocks and kind != "residual":
            row[-1].text_input(f"blocks of {KIND_LABELS[kind]}", key=f"{prefix}blocks:{kind}", placeholder="all",
                               label_visibility="collapsed")
    st.markdown(DISABLED_STYLE, unsafe_allow_html=True)
    with st.expander("why some boxes are disabled"):
        for reason in dict.fromkeys(reasons):
            st.markdown(f"- {reason}")
    return chosen


def chosen_layers(prefix: str = "") -> str | None:
    """The block ranges typed in a toggle grid as `--layers` text (KIND=BLOCKS;...), None when all are empty."""
    entries = [f"{kind}={text.strip()}" for kind in KINDS
               if (text := st.session_state.get(f"{prefix}blocks:{kind}") or "").strip()]
    return ";".join(entries) or None


def timing(elapsed: float, done: int, total: int) -> str:
    """"12 s, about 30 s left": the part's elapsed time and, once a tenth of it is done, the time
    left at its rate so far (an estimate the bar revises as it goes)."""
    text = f"{elapsed:.0f} s"
    if 0 < done < total and done >= 0.1 * total:
        text += f", about {elapsed * (total - done) / done:.0f} s left"
    return text


def progress_text(phase: str, done: int, total: int, elapsed: float, note: str | None = None) -> str:
    """"phase: 3/10 · 12 s, about 28 s left · note": one bar's text, in the page's bars and in shared work's."""
    return f"{phase}: {done}/{total} · {timing(elapsed, done, total)}" + (f" · {note}" if note else "")


# Scrolls the page to an anchor once it is drawn (retried: the anchor and this script's frame arrive apart).
_SCROLL = """<script>
let tries = 0;
const go = () => {{
  const target = window.parent.document.getElementById("{anchor}");
  if (target) {{ target.scrollIntoView({{block: "start", behavior: "instant"}}); return; }}
  if (++tries < 50) setTimeout(go, 100);
}};
go();
</script>"""


def scroll_into_view(anchor: str) -> None:
    """Bring this point of the page to the top of the window: a run started by a button shows its progress
    and first results where the button was, often below the fold at 1280×720 (issue #109)."""
    import streamlit.components.v1 as components

    st.markdown(f"<div id='{anchor}'></div>", unsafe_allow_html=True)
    components.html(_SCROLL.format(anchor=anchor), height=0)


class StreamlitProgress:
    """A phase-aware progress callback drawn as one st.progress bar.

    Redraws at most a few times a second: every redraw is a message the browser renders, and on a
    2-core machine a browser busy redrawing slows the computation it reports on."""

    def __init__(self, text: str, interval: float = 0.25):
        scroll_into_view("symalign-progress")  # a bar starts on a click: in view, with what follows it
        self.bar = st.progress(0.0, text=text)
        self.interval, self.last = interval, 0.0
        self.phase, self.began = None, time.monotonic()

    def __call__(self, phase: str, done: int, total: int, note: str | None = None) -> None:
        now = time.monotonic()
        if phase != self.phase:  # each part's clock starts with it
            self.phase, self.began = phase, now
        if done < total and now - self.last < self.interval:
            return
        self.last = now
        text = progress_text(phase, done, total, now - self.began, note)
        self.bar.progress(min(1.0, done / max(total, 1)), text=text)

    def done(self) -> None:
        self.bar.empty()


def follow_task(task: SharedTask, text: str, interval: float = 0.25):
    """Draw a shared computation's progress on this visitor's page until it ends; its result (or its
    error, raised here in the visitor's session so `user_errors` says it)."""
    bar = st.progress(0.0, text=text)
    while not task.wait(interval):
        now = task.snapshot()
        if now.total:
            elapsed = time.monotonic() - now.phase_began
            bar.progress(min(1.0, now.done / now.total),
                         text=progress_text(now.phase, now.done, now.total, elapsed, now.note))
        else:
            bar.progress(0.0, text=now.phase)
    bar.empty()
    return task.outcome()
