"""What a background job can be: each kind maps its JSON request onto the recorded workflow the
CLI and the pages already use (`symalign.workflows.execute`), so a job computes exactly what the same
request would compute in the foreground. A kind returns the ids of the runs it recorded."""

from __future__ import annotations

from collections.abc import Callable

from symalign.runs.store import RunStore

Progress = Callable[[str, int, int], None]


def _config(request: dict):
    from symalign.match.config import AlignConfig

    return AlignConfig(**request["config"])


def barrier_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    from symalign.workflows.execute import barrier_run

    run_id, _ = barrier_run(request["a"], request["b"], data=request.get("data"), points=request.get("points", 21),
                            max_examples=request.get("max_examples"), store=store, source="app",
                            label=request.get("label", ""), progress=progress)
    return [run_id]


def align_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """An alignment and its barrier; with `with_vanilla`, then the vanilla barrier (the Align page's order)."""
    from symalign.workflows.execute import align_then_vanilla

    return align_then_vanilla(request["a"], request["b"], _config(request), bool(request.get("with_vanilla")),
                              points=request.get("points", 21), max_examples=request.get("max_examples"), store=store,
                              source="app", label=request.get("label", ""), progress=progress, reuse=True,
                              split=request.get("split", "eval"))


def align_many_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    from symalign.workflows.many import align_many_run

    run = align_many_run(request["models"], _config(request), measure=True, points=request.get("points", 21),
                         max_examples=request.get("max_examples"), store=store, source="app",
                         label=request.get("label", ""), progress=progress, split=request.get("split", "eval"))
    return [run.run_id]


def simplex_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """One surface per config (`configs`, the Simplex page's methods side by side; or one `config`)."""
    from symalign.match.config import AlignConfig
    from symalign.workflows.many import simplex_run

    configs = [AlignConfig(**c) for c in request.get("configs") or [request["config"]]]
    ids = []
    for config in configs:
        ids.append(simplex_run(request["models"], config, resolution=request.get("resolution", 10),
                               epsilon=request.get("epsilon", 0.05), max_examples=request.get("max_examples"),
                               store=store, source="app", label=request.get("label", ""),
                               progress=lambda phase, d, t, *note, m=config.method:
                               progress(f"{m}: {phase}", d, t, *note))[0])
    return ids


def merge_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """Merge models (the Merge page): the checkpoint goes to the run's folder."""
    from symalign.workflows.merging import merge_alignment, merge_run

    how_align = request.get("align", "weight")
    run = merge_run(request["models"], how_align, request.get("how", "average"),
                    request.get("data"), examples=request.get("examples", 64), max_examples=request.get("max_examples"),
                    store=store, source="app", label=request.get("label", ""), progress=progress,
                    base=request.get("base"), parameters=request.get("parameters"), ot=request.get("ot"),
                    alignment=merge_alignment(how_align, request.get("classes"), request.get("data")))
    return [run.run_id]


def transport_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """Carry a fine-tune's task vector over (the Merge & transport page): checkpoint in the run's folder."""
    from symalign.workflows.merging import head_strategy_alignment, transport_run

    how_align = request.get("align", "weight")
    run = transport_run(request["a"], request["a_ft"], request["b"], [float(x) for x in request["alphas"]],
                        request.get("data_task"), request.get("data_base"), how_align,
                        max_examples=request.get("max_examples"), store=store, source="app",
                        label=request.get("label", ""), progress=progress,
                        alignment=head_strategy_alignment(how_align, request.get("head_strategy"),
                                                          request.get("data_base")),
                        residual_per_block=bool(request.get("residual_per_block")))
    return [run.run_id]


def train_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """Train a recipe into a folder (the Models page); it records no run, the folder is the result."""
    from symalign.train.loop import train

    train(request["recipe"], int(request["seed"]), request["out"], steps=request.get("steps"),
          progress=lambda done, total, loss: progress("train", done, total))
    return []


def sweep_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """A preset grid over a zoo family (the Ablations page), serially in the worker."""
    from symalign.sweeps.grid import preset_grid
    from symalign.sweeps.sweep import run_sweep

    grid = preset_grid(request["preset"], request["family"], seeds=request.get("seeds") or [0])
    grid.points, grid.max_examples = request.get("points", 21), request.get("max_examples")
    result = run_sweep(grid, executor="serial", store=store, source="app",
                       progress=lambda done, total, row: progress("cells", done, total, row["row"]))
    return [result.run_id]


def demo_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """Part 2 of Home's guided demo (two zoo seeds: vanilla, weight, learned). A job, so the demo goes
    on when its tab closes or reloads and the page picks it up on return; each run is added to the
    job as it lands (the page shows it at once), and a part asked before is reused, not recomputed."""
    from symalign.demo import seeds_demo

    recipe = request["recipe"]  # on the threads the load leaves free, as every job (run_kind; docs/app.md)
    ids = seeds_demo(f"zoo:{recipe}/0", f"zoo:{recipe}/1", request["data"], store,
                     learned_steps=request.get("steps"), progress=progress, reuse=True,
                     on_run=getattr(progress, "landed", None))
    return [i for i in ids if i]


def curve_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """The "Beyond the straight line" page: the curve before and after alignment (reused when asked before)."""
    from symalign.landscape.curve_options import CurveOptions
    from symalign.workflows.curves import curve_pair_runs

    options = CurveOptions(**request.get("options", {}))
    return curve_pair_runs(request["a"], request["b"], _config(request), options, data=request.get("data"),
                           points=request.get("points", 21), max_examples=request.get("max_examples"), store=store,
                           source="app", progress=progress)


def plane_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """The loss over a plane through three models (the "Beyond the straight line" page), recorded."""
    from symalign.runs.settings import PlaneSettings
    from symalign.workflows.curves import recorded_plane

    return [recorded_plane(PlaneSettings(**request), store, source="app", progress=progress)]


def paper_job(request: dict, store: RunStore, progress: Progress) -> list[str]:
    """One of the papers' tables on a zoo family (the Ablations page), recorded as a `paper` run."""
    from symalign.sweeps.paper_tables import paper_table_run

    return [paper_table_run(request["table"], request["family"], request.get("max_examples"), store=store,
                            source="app", progress=progress)]


JOB_KINDS: dict[str, Callable[[dict, RunStore, Progress], list[str]]] = {
    "barrier": barrier_job, "align": align_job, "align-many": align_many_job, "simplex": simplex_job,
    "sweep": sweep_job, "train": train_job, "merge": merge_job,
    "transport": transport_job, "demo": demo_job, "curve": curve_job, "paper": paper_job,
    "plane": plane_job}


def run_kind(kind: str, request: dict, store: RunStore, progress: Progress) -> list[str]:
    """A job's work as the worker runs it: on the threads the machine's load leaves free (issue #70: beside a
    2-thread neighbour a job on every core ran 5-15x slower, four threads spinning on two cores, where the
    load probe, and so the page's estimate, said 1-3.4x; on the free cores it costs the share it gets)."""
    from symalign.device import polite_threads
    from symalign.runs.load import measured_load

    with polite_threads(), measured_load():  # the runs it records keep the load they ran under
        return JOB_KINDS[kind](request, store, progress)
