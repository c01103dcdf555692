"""The app's pages under Streamlit's AppTest: they render, toggles drive the run config,
inadmissible classes are disabled with the spec's reason, runs complete and show up everywhere,
and bad input gives a message, never an exception."""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import pytest
from job_support import wait_for_job
from streamlit.testing.v1 import AppTest

from symalign.cli import main
from symalign.jobs.queue import JobQueue
from symalign.runs import RunStore
from symalign.zoo import resolve_zoo

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["home", "models", "symmetries", "align", "interpolation", "compare", "runs", "jobs", "simplex", "spectra",
         "ablations", "merge", "barrier_anatomy", "paths"]


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMALIGN_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def page(name: str, timeout: float = 120) -> AppTest:
    return AppTest.from_file(str(ROOT / "app_pages" / f"{name}.py"), default_timeout=timeout)


def downloads(at: AppTest) -> list:
    """The page's own download buttons (every figure also has its HTML, SVG and PDF downloads)."""
    return [d for d in at.get("download_button") if not d.key.endswith(("-html", "-svg", "-pdf"))]


def clean(at: AppTest) -> AppTest:
    assert not at.exception, [e.value for e in at.exception]
    return at


def pick_vit_pair(at: AppTest) -> AppTest:
    at.selectbox(key="align-a").set_value("zoo:vit-digits/0")
    at.selectbox(key="align-b").set_value("zoo:vit-digits/1")
    return clean(at.run())


@pytest.mark.parametrize("name", PAGES)
@pytest.mark.slow
def test_every_page_renders_on_an_empty_history(home, name):
    at = clean(page(name).run())
    assert not at.error, [e.value for e in at.error]


def test_the_router_renders_home_with_navigation(home):
    at = clean(AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run())
    assert any("Guided demo" in h.value for h in at.header)


def test_toggles_change_the_run_config_and_presets_set_them(home):
    at = pick_vit_pair(clean(page("align").run()))
    assert at.session_state["align-config"]["classes"] == {
        "mlp": "perm", "heads": "perm", "qk": "none", "vo": "none", "residual": "none"}
    at.checkbox(key="toggle:qk:orthogonal").check().run()
    at.checkbox(key="toggle:residual:orthogonal").check().run()
    at.checkbox(key="toggle:mlp:perm").uncheck().run()
    assert clean(at).session_state["align-config"]["classes"] == {
        "mlp": "none", "heads": "perm", "qk": "orthogonal", "vo": "none", "residual": "orthogonal"}
    at.checkbox(key="toggle:qk:invertible").check().run()  # one class per component: the other box clears
    assert at.session_state["align-config"]["classes"]["qk"] == "invertible"
    assert not at.checkbox(key="toggle:qk:orthogonal").value
    at.button(key="preset:none").click().run()
    assert set(at.session_state["align-config"]["classes"].values()) == {"none"}
    # issue #56: no class ticked is a warning and a disabled button, not a 12 s run that changes nothing
    assert any("No symmetry class is ticked" in w.value for w in at.warning)
    assert at.button(key="align-go").disabled
    at.button(key="preset:permutations").click().run()
    assert not at.warning and not at.button(key="align-go").disabled
    at.selectbox(key="align-method").set_value("learned").run()
    assert at.session_state["align-config"]["method"] == "learned"


def test_inadmissible_classes_are_disabled_with_the_specs_reason(home):
    at = pick_vit_pair(clean(page("align").run()))
    residual = at.checkbox(key="toggle:residual:invertible")
    assert residual.disabled and "LayerNorm divides every token" in residual.help
    scaled = at.checkbox(key="toggle:mlp:scaled_perm")  # the zoo ViT has a GELU MLP
    assert scaled.disabled and "not positively homogeneous" in scaled.help
    heads = at.checkbox(key="toggle:heads:orthogonal")
    assert heads.disabled and "only permutations" in heads.help
    assert not at.checkbox(key="toggle:residual:orthogonal").disabled  # canonical form admits rotations
    assert not at.checkbox(key="toggle:mlp:perm").disabled


def test_new_families_get_their_own_toggles_and_presets(home):
    """A Llama: RoPE refuses orthogonal QK maps and admits rotary ones, the preset `all` picks
    them; a BERT: post-LN leaves the residual permutations only, and `all` picks those."""
    at = clean(page("align").run())
    at.selectbox(key="align-a").set_value("zoo:llama-shakespeare/0")
    at = clean(at.selectbox(key="align-b").set_value("zoo:llama-shakespeare/1").run())
    qk = at.checkbox(key="toggle:qk:orthogonal")
    assert qk.disabled and "RoPE" in qk.help and not at.checkbox(key="toggle:qk:rotary").disabled
    at = clean(at.button(key="preset:all").click().run())
    assert at.session_state["align-config"]["classes"]["qk"] == "rotary"
    at.selectbox(key="align-a").set_value("zoo:bert-shakespeare/0")
    at = clean(at.selectbox(key="align-b").set_value("zoo:bert-shakespeare/1").run())
    residual = at.checkbox(key="toggle:residual:orthogonal")
    assert residual.disabled and "post-LN" in residual.help
    at = clean(at.button(key="preset:all").click().run())
    assert at.session_state["align-config"]["classes"]["residual"] == "perm"


def test_mismatched_models_get_one_message(home):
    at = clean(page("align").run())
    at.selectbox(key="align-a").set_value("zoo:vit-digits/0")
    at.selectbox(key="align-b").set_value("zoo:gpt-shakespeare/0").run()
    (error,) = clean(at).error
    assert "different architectures" in error.value
    # the form stays (issue #43: it vanished), its Align button disabled with the reason
    assert at.button(key="align-go").disabled and "different architectures" in at.button(key="align-go").help
    assert at.selectbox(key="align-method").value == "weight"
    at.selectbox(key="align-b").set_value("zoo:vit-digits/1").run()
    assert not clean(at).error and not at.button(key="align-go").disabled


@pytest.mark.slow
def test_weight_matching_run_completes_and_its_barrier_appears_everywhere(home):
    at = pick_vit_pair(clean(page("align").run()))
    at.button(key="preset:all").click().run()  # perms + within-head and residual rotations
    at.number_input(key="align-max-examples").set_value(200)
    at.checkbox(key="align-background").uncheck()  # in this script run (the default is a job)
    at.button(key="align-go").click().run()
    clean(at)
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: float(m.value) for m in at.metric}
    # 3.95 vs 2.23 on all examples (README)
    assert metrics["vanilla barrier"] > metrics["barrier after alignment"] + 0.5
    runs = RunStore(home / "runs.sqlite").list()
    assert {r.kind for r in runs} == {"align", "barrier"} and all(r.state == "done" for r in runs)
    aligned = next(r for r in runs if r.kind == "align")
    assert aligned.metrics["classes"]["residual"] == "orthogonal"
    assert aligned.metrics["barrier"] == pytest.approx(metrics["barrier after alignment"], abs=1e-4)
    assert (Path(aligned.artifacts) / "model.safetensors").is_file()

    interp = clean(page("interpolation").run())
    assert len(interp.multiselect(key="interp-runs").value) == 2
    assert len(interp.dataframe[0].value) == 2
    compare = clean(page("compare").run())
    table = compare.dataframe[0].value
    assert sorted(table["method"]) == ["none", "weight"]
    assert table["barrier"].max() == pytest.approx(metrics["vanilla barrier"], abs=1e-4)


def test_models_of_different_widths_are_embedded_and_aligned(home):
    at = clean(page("align").run())
    at.selectbox(key="align-a").set_value("zoo:vit-digits-narrow/1")
    at.selectbox(key="align-b").set_value("zoo:vit-digits/2").run()
    clean(at)
    assert not at.error and any("different widths" in i.value for i in at.info)
    at.button(key="preset:all").click().run()
    at.number_input(key="align-max-examples").set_value(100)
    at.checkbox(key="align-background").uncheck()  # in this script run (the default is a job)
    at.button(key="align-go").click().run()
    clean(at)
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: float(m.value) for m in at.metric}
    assert metrics["vanilla barrier"] > metrics["barrier after alignment"] + 1.0  # 3.26 vs 0.86 (README)
    aligned = next(r for r in RunStore(home / "runs.sqlite").list() if r.kind == "align")
    assert aligned.metrics["widths"]["embedded"] == "a" and aligned.metrics["widths"]["from"]["residual"] == 48
    sym = clean(page("symmetries").run())  # the alignment's heat maps show the narrow model embedded
    assert not sym.error and any("narrower one" in c.value for c in sym.caption)


def test_a_run_made_with_the_cli_shows_up_and_can_be_deleted(home):
    assert main(["barrier", "zoo:vit-digits/0", "zoo:vit-digits/2", "--max-examples", "32", "--points", "5"]) == 0
    (run,) = RunStore(home / "runs.sqlite").list()
    at = clean(page("runs").run())
    assert at.selectbox(key="history-open").value == run.id
    assert run.id in at.dataframe[0].value["id"].tolist()
    at.text_input(key="history-model").set_value("gpt").run()
    assert any("No runs match" in i.value for i in at.info)
    at.text_input(key="history-model").set_value("vit-digits/2").run()
    at.button(key="history-delete").click().run()
    assert RunStore(home / "runs.sqlite").list() == []


def means(matrix) -> list[float]:
    """The mean barriers a sweep's matrix shows ("2.873 ± 0.934")."""
    return [float(v.split(" ± ")[0]) for v in matrix["barrier, mean ± std"]]


def test_a_sweep_from_the_cli_opens_as_its_table_in_the_history(home, tmp_path):
    grid = tmp_path / "grid.toml"
    grid.write_text('pairs = [["zoo:vit-digits/0", "zoo:vit-digits/2"]]\npoints = 3\nmax_examples = 32\n'
                    '[[rows]]\nname = "vanilla"\nmethod = "none"\n'
                    '[[rows]]\nname = "weight"\nmethod = "weight"\n'
                    '[[rows]]\nname = "weight (permutations)"\nmethod = "weight"\nclasses = "permutations"\n')
    assert main(["sweep", str(grid), "--executor", "serial"]) == 0
    (sweep,) = RunStore(home / "runs.sqlite").list(kind="sweep")
    at = page("runs")
    at.query_params["run"] = sweep.id  # a shared link to the sweep
    at = clean(at.run())
    assert at.selectbox(key="history-open").value == sweep.id
    assert not at.warning
    summary, cells = at.dataframe[1].value, at.dataframe[2].value
    assert summary["row"].tolist() == ["vanilla", "weight", "weight (permutations)"]
    assert "note" not in summary.columns  # issue #70: a sentence cut in a cell at 1280 px; it reads below instead
    means_by_row = dict(zip(summary["row"], means(summary)))
    noted = [m.value for m in at.markdown if m.value.startswith("**weight (permutations)**: above vanilla")]
    assert means_by_row["weight (permutations)"] > means_by_row["vanilla"] and len(noted) == 1  # 2.99 > 2.40
    unknown = page("runs")
    unknown.query_params["run"] = "does-not-exist"  # issue #56: it silently showed another run
    unknown = clean(unknown.run())
    assert any("No run `does-not-exist`" in w.value for w in unknown.warning)
    assert sorted(cells["barrier (above the endpoint line)"].tolist()) == pytest.approx(
        sorted(c["barrier"] for c in sweep.metrics["cells"]), abs=1e-4)
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    (chart,) = [c for c in charts if "mean ± std" in c["layout"]["title"]["text"]]
    loss, accuracy = chart["data"]  # bars with ± std whiskers: the summary's numbers, loss and accuracy
    assert loss["y"] == pytest.approx(means(summary), abs=5e-4) and loss["error_y"]["array"] == [0.0] * 3
    assert [f"{a:.1f}" for a in accuracy["y"]] == [v.split(" ± ")[0] for v in
                                                   summary["accuracy barrier (pp), mean ± std"]]


@pytest.mark.slow
def test_ablations_page_runs_a_grid_and_shows_the_matrix(home):
    at = clean(page("ablations").run())
    at.selectbox(key="ablations-family").set_value("vit-digits")
    at.selectbox(key="ablations-preset").set_value("components")
    at.slider(key="ablations-points").set_value(3)
    at.number_input(key="ablations-examples").set_value(32)
    at.checkbox(key="ablations-background").uncheck()  # first in the page ...
    at = clean(at.run())
    at = clean(at.button(key="ablations-go").click().run())
    (sweep,) = RunStore(home / "runs.sqlite").list(kind="sweep")
    assert sweep.metrics["executed"] == 21 and sweep.source == "app"  # 7 rows (the rescaling one included) × 3 pairs
    summary = at.dataframe[0].value
    assert summary["row"].tolist()[0] == "all classes" and len(summary) == 7
    runs = RunStore(home / "runs.sqlite").list(kind="align")
    for row, mean, rise in zip(summary["row"], means(summary), summary["rise over all classes"]):
        mine = [r.metrics["barrier"] for r in runs if r.label.endswith(f": {row}")]
        assert len(mine) == 3 and mean == pytest.approx(sum(mine) / 3, abs=5e-4)  # the matrix is the recorded cells
        assert rise == pytest.approx(mean - means(summary)[0], abs=2e-3)  # each rounded to 3 decimals
    at.checkbox(key="ablations-background").check()  # ... then as a background job, reusing every cell
    at = clean(at.button(key="ablations-go").click().run())
    job = wait_for_job(home, at.session_state["ablations-last-job"])
    assert job.state == "done", job.error
    again = clean(at.run())
    latest = RunStore(home / "runs.sqlite").list(kind="sweep")[0]
    assert (latest.metrics["executed"], latest.metrics["reused"]) == (0, 21)
    assert means(again.dataframe[0].value) == means(summary)


def test_bad_uploads_give_a_message_and_a_good_one_is_listed(home):
    at = clean(page("models").run())
    assert "bin" not in at.file_uploader(key="upload-files").proto.type  # the picker offers only what is accepted
    pickled = _zip({"m/config.json": b"{}", "m/pytorch_model.bin": b"\x80\x04junk"})  # a pickle inside a zip
    at.file_uploader(key="upload-files").set_value(("pickled.zip", pickled, "application/zip"))
    at.run().button(key="upload-go").click().run()
    assert "never loads from an upload" in clean(at).error[0].value
    at.file_uploader(key="upload-files").set_value(("evil.zip", _zip({"../x/config.json": b"{}"}), "application/zip"))
    at.run().button(key="upload-go").click().run()
    assert "outside its folder" in clean(at).error[0].value
    zoo = resolve_zoo("zoo:vit-digits/1")
    good = _zip({f"m/{p.name}": p.read_bytes() for p in zoo.iterdir() if p.is_file()})
    at.file_uploader(key="upload-files").set_value(("mine.zip", good, "application/zip"))
    at.run().button(key="upload-go").click().run()
    assert not clean(at).error and "imported mine" in at.success[0].value
    at = clean(page("models").run())
    assert "yours: mine" in at.dataframe[1].value["model"].tolist()
    assert "yours: mine" in clean(page("align").run()).selectbox(key="align-a").options


def test_linking_a_path_that_is_not_a_model_says_why(home, tmp_path):
    at = clean(page("models").run())
    at.text_input(key="link-path").set_value(str(tmp_path / "nowhere")).run()
    at.button(key="link-go").click().run()
    assert "no model at" in clean(at).error[0].value


@pytest.mark.slow
def test_guided_demo_plants_a_symmetry_and_removes_it(home):
    at = clean(page("home", timeout=300).run())
    at.number_input(key="demo-steps-vit-digits").set_value(20)
    at.button(key="demo-run").click().run()
    clean(at)
    queue = JobQueue(home / "runs.sqlite")
    (job,) = queue.list()  # part 2 runs as a job: it survives a closed tab
    job_id = job.id
    other = clean(page("home").run())  # another tab (a reload) opened while it runs picks it up
    if queue.get(job_id).state == "running":  # (20 steps can end before; test_browser closes a tab for real)
        assert other.session_state["demo-job"] == job_id
    assert wait_for_job(home, job_id).state == "done"
    at = clean(at.run())  # the panel sees the job done and shows its runs
    assert not at.error, [e.value for e in at.error]
    m = {x.label: x.value for x in at.metric}
    assert float(m["max |Δ logit|, A vs T(A)"]) < 1e-4
    assert float(m["vanilla barrier"]) > 1.0 and float(m["barrier after weight matching"]) < 1e-3
    assert len(RunStore(home / "runs.sqlite").list(state="done")) == 3
    # the λ slider: the model halfway classifies one digit on each path, its probabilities shown
    shown = [x.value for x in at.markdown if "%" in x.value and "**" in x.value and "What this shows" not in x.value]
    assert len(shown) == 2, [x.value for x in at.markdown]
    assert any(x.value.startswith("**What this shows.**") for x in at.markdown)  # the demo's conclusion
    # asked again (another visitor, the same seeded demo): answered from the history, nothing recomputed
    again = clean(page("home", timeout=300).run())
    assert "demo-job" not in again.session_state  # a finished demo is not another visitor's to resume
    again.number_input(key="demo-steps-vit-digits").set_value(20)
    again = clean(again.run())
    assert any("took about" in c.value for c in again.caption)  # the estimate, from what the demo took here
    again.button(key="demo-run").click().run()
    second = queue.list()[0]  # from the queue: a demo answered at once can end within the click's own run
    assert second.id != job_id and second.kind == "demo"
    assert wait_for_job(home, second.id).runs == wait_for_job(home, job_id).runs
    assert len(RunStore(home / "runs.sqlite").list(state="done")) == 3


def _zip(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_training_a_cpu_recipe_in_the_app_adds_a_usable_model(home):
    at = clean(page("models").run())
    at.selectbox(key="train-recipe").set_value("vit-digits")
    at.number_input(key="train-steps").set_value(5)
    at.checkbox(key="train-background").uncheck()  # in this script run (the default is a job)
    at.button(key="train-go").click().run()
    assert not clean(at).error and "trained vit-digits-seed3-5steps" in at.success[0].value
    at = clean(page("models").run())
    assert "yours: vit-digits-seed3-5steps" in at.dataframe[1].value["model"].tolist()
    assert "vit: 4 layers, width 64" in at.dataframe[1].value["architecture"].iloc[0]


@pytest.mark.slow
def test_training_in_the_background_adds_the_model_when_the_job_ends(home):
    at = clean(page("models").run())
    at.selectbox(key="train-recipe").set_value("vit-digits")
    at.number_input(key="train-steps").set_value(4)
    at.checkbox(key="train-background").check()
    at.button(key="train-go").click().run()
    job = wait_for_job(home, clean(at).session_state["train-last-job"])
    assert job.state == "done" and job.kind == "train", job.error
    at.run()  # the panel sees the job done and shows the trained model
    assert not clean(at).error and "trained vit-digits-seed3-4steps" in at.success[0].value
    assert "yours: vit-digits-seed3-4steps" in at.dataframe[1].value["model"].tolist()


def pick_vit_three(at: AppTest, prefix: str) -> AppTest:
    for i in range(3):
        key = f"{prefix}-{i}" if prefix == "simplex" else f"align-{'abc'[i]}"
        at.selectbox(key=key).set_value(f"zoo:vit-digits/{i}")
    return clean(at.run())


@pytest.mark.slow
def test_three_model_align_run_aligns_into_one_basis(home):
    at = clean(page("align").run())
    at.toggle(key="align-three").set_value(True).run()
    at = pick_vit_three(clean(at), "align")
    assert "activation" not in at.selectbox(key="align-method").options  # universe alignment: none/weight/learned/soft
    at.button(key="preset:all").click().run()
    at.number_input(key="align-max-examples").set_value(100)
    at.checkbox(key="align-background").uncheck()  # in this script run (the default is a job)
    at.button(key="align-go").click().run()
    assert not clean(at).error, [e.value for e in at.error]
    metrics = {m.label: float(m.value) for m in at.metric}
    assert set(metrics) == {"barrier A ↔ B", "barrier A ↔ C", "barrier B ↔ C"}
    (run,) = RunStore(home / "runs.sqlite").list()
    assert run.kind == "align-many" and run.state == "done" and len(run.all_models) == 3
    assert [p["barrier"] for p in run.metrics["pairwise"]] == pytest.approx(list(metrics.values()), abs=1e-4)
    assert all((Path(run.artifacts) / str(i) / "model.safetensors").is_file() for i in range(3))
    history = clean(page("runs").run())
    assert len(history.metric) == 3  # the run opens with its pairwise barriers
    compare = clean(page("compare").run())
    assert compare.dataframe[0].value["kind"].tolist() == ["align-many"]


def test_simplex_page_computes_surfaces_on_one_colour_scale(home):
    at = pick_vit_three(clean(page("simplex", timeout=300).run()), "simplex")
    at.multiselect(key="simplex-methods").set_value(["none", "weight"])
    at.slider(key="simplex-resolution").set_value(3)
    at.number_input(key="simplex-max-examples").set_value(64)
    at.checkbox(key="simplex-background").uncheck()  # in this script run (the default is a job)
    at.button(key="simplex-go").click().run()
    assert not clean(at).error, [e.value for e in at.error]
    runs = RunStore(home / "runs.sqlite").list(kind="simplex")
    assert sorted(r.method for r in runs) == ["none", "weight"] and all(r.state == "done" for r in runs)
    assert all(len(r.metrics["weights"]) == 10 and r.metrics["classes"]["residual"] == "orthogonal" for r in runs)
    table = at.dataframe[0].value
    assert sorted(table["method"]) == ["none", "weight"]
    assert table["max barrier"].tolist() == pytest.approx(
        [next(r for r in runs if r.method == m).metrics["max_barrier"] for m in table["method"]])
    assert len(at.get("plotly_chart")) == 1  # both methods in one figure, one colour scale
    history = clean(page("runs").run())
    assert history.dataframe[0].value["kind"].tolist() == ["simplex", "simplex"]
    compare = clean(page("compare").run())
    assert sorted(compare.dataframe[0].value["kind"]) == ["simplex", "simplex"]


@pytest.mark.slow
def test_simplex_surfaces_as_a_background_job_show_when_it_ends(home):
    at = pick_vit_three(clean(page("simplex", timeout=300).run()), "simplex")
    at.multiselect(key="simplex-methods").set_value(["none", "weight"])
    at.slider(key="simplex-resolution").set_value(2)
    at.number_input(key="simplex-max-examples").set_value(48)
    at.checkbox(key="simplex-background").check()
    at.button(key="simplex-go").click().run()
    job = wait_for_job(home, clean(at).session_state["simplex-last-job"])
    assert job.state == "done" and len(job.runs) == 2, job.error
    at.run()
    assert not clean(at).error, [e.value for e in at.error]
    runs = RunStore(home / "runs.sqlite").list(kind="simplex")
    assert sorted(r.id for r in runs) == sorted(job.runs) and all(r.pid != os.getpid() for r in runs)
    table = at.dataframe[0].value
    assert sorted(table["method"]) == ["none", "weight"]  # the job's runs are the ones shown


@pytest.mark.slow
def test_orthogonal_corrections_page_explains_a_learned_run(home):
    at = clean(page("spectra", timeout=300).run())
    assert any("No learned alignment" in i.value for i in at.info)
    at.number_input(key="spectra-steps").set_value(30).run()  # the page and its numbers are tested, not 600 steps
    at.button(key="spectra-quick").click().run()
    assert not clean(at).error, [e.value for e in at.error]
    job = wait_for_job(home, at.session_state["spectra-quick-job"])  # a background job (issue #43)
    assert job.state == "done", job.error
    at = clean(page("spectra", timeout=300).run())  # the page, opened again, explains the job's run
    store = RunStore(home / "runs.sqlite")
    (learned,) = store.list(kind="align")
    (spectrum,) = store.list(kind="spectrum")
    assert spectrum.settings["of_run"] == learned.id and spectrum.state == "done"
    assert learned.settings["config"]["steps"] == 30  # the steps asked for on the page
    sentence = next(m.value for m in at.markdown if "of the angles" in m.value)
    share = spectrum.metrics["summary"]
    total = sum(v["count"] for v in share.values())
    expected = sum(v["share_below_0.1"] * v["count"] for v in share.values()) / total
    assert f"**{100 * expected:.0f}%**" in sentence
    components = at.dataframe[0].value
    assert len(components) == 1 + 2 * 4 and set(components["kind"]) == {"residual", "qk", "vo"}
    clean(page("spectra").run())  # reopened: the recorded spectrum is reused, not recomputed
    assert len(store.list(kind="spectrum")) == 1


@pytest.mark.slow
def test_a_background_job_from_the_align_page_finishes_while_the_user_is_elsewhere(home):
    """Submitted from Align, the job runs in a worker process; the test visits other pages (each a
    fresh script run, as a browser would), then the Jobs page shows it done and the runs are in the
    history; back on Align its result panel shows the recorded barrier."""

    from symalign.jobs.queue import JobQueue

    at = pick_vit_pair(clean(page("align").run()))
    at.number_input(key="align-max-examples").set_value(64)
    at.number_input(key="align-points").set_value(5)
    at.checkbox(key="align-background").check()
    at.button(key="align-go").click().run()
    clean(at)
    job_id = at.session_state["align-last-job"]
    queue = JobQueue(home / "runs.sqlite")
    assert queue.get(job_id).state in ("queued", "running")
    reloaded = page("align")  # the same browser reloads (the session id is the browser's): it follows the job
    reloaded.session_state["symalign-session"] = at.session_state["symalign-session"]
    reloaded = clean(reloaded.run())
    stranger = clean(page("align").run())  # another visitor does not
    if queue.get(job_id).state in ("queued", "running"):
        assert reloaded.session_state["align-last-job"] == job_id
    assert "align-last-job" not in stranger.session_state
    for name in ("runs", "compare", "models"):  # the user wanders off; the page scripts end, the job does not
        clean(page(name).run())
    job = wait_for_job(queue, job_id)
    assert job.state == "done", job.error
    jobs = clean(page("jobs").run())
    table = jobs.dataframe[0].value
    assert table.loc[table["job"] == job_id, "state"].item() == "done"
    store = RunStore(home / "runs.sqlite")
    assert sorted(store.get(r).kind for r in job.runs) == ["align", "barrier"]
    at.run()  # the Align page's panel sees the job done and shows its result
    clean(at)
    barrier = store.get(job.runs[0]).metrics["barrier"]
    assert any(m.label == "barrier after alignment" and m.value == f"{barrier:.4f}" for m in at.metric)


@pytest.mark.slow
def test_the_jobs_page_cancels_a_running_job(home):
    import time

    from symalign.jobs.queue import JobQueue, ensure_worker

    queue = JobQueue(home / "runs.sqlite")
    job_id = queue.submit("align", {"a": "zoo:vit-digits/0", "b": "zoo:vit-digits/1", "points": 5, "max_examples": 64,
                                    "config": {"method": "learned", "classes": {"residual": "orthogonal"},
                                               "data": "digits", "steps": 100_000, "patience": 100_000}})
    ensure_worker(queue, idle_exit=5)
    deadline = time.monotonic() + 120
    while queue.get(job_id).done == 0 and time.monotonic() < deadline:
        time.sleep(0.3)
    at = clean(page("jobs").run())
    assert any("running · align" in p.proto.text for p in at.get("progress"))
    at.button(key=f"cancel-{job_id}").click().run()
    clean(at)
    asked = time.monotonic()
    while queue.get(job_id).state == "running" and time.monotonic() - asked < 15:
        time.sleep(0.2)
    assert queue.get(job_id).state == "cancelled" and time.monotonic() - asked < 10


def test_symmetries_page_plants_a_symmetry_and_shows_an_alignments_weights(home, tmp_path):
    """The plant demo: different weights, identical predictions, for a permutation and a rotation;
    after a weight-matching run, A, B and aligned B as heat maps, aligned B closer to A than B is."""
    import json

    import numpy as np

    at = clean(page("symmetries").run())
    assert not at.error, [e.value for e in at.error]
    assert any("admissible" in str(df.value.values) for df in at.dataframe)  # the class table
    from symalign.models import canonicalize, load_model, spec_of
    from symalign.symmetry_anatomy import class_table

    reasons = [r for row in class_table(spec_of(canonicalize(load_model("zoo:vit-digits/0"))))
               for k, r in row.items() if k != "component" and r != "admissible"]
    shown = " ".join(m.value for m in at.markdown)
    assert reasons and all(r in shown for r in reasons)  # every refusal's reason in full, not cut off in a cell
    for kind, cls in (("mlp", "perm"), ("residual", "orthogonal")):
        at.selectbox(key="sym-kind").set_value(kind).run()
        at.selectbox(key=f"sym-class-{kind}").set_value(cls).run()
        shown = clean(at).session_state["sym-planted"]
        assert shown["moved"] > 0.05 and shown["function_gap"] < 1e-4 and shown["same_predictions"], (kind, shown)
        table = at.dataframe[-1].value
        assert table["A predicts"].tolist() == table["T(A) predicts"].tolist()
        assert table["A's probability"].tolist() == pytest.approx(table["T(A)'s probability"].tolist(), abs=1e-5)
        assert "target" in table.columns  # real digits from the model's own data
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--out", str(tmp_path / "aligned")]) == 0
    at = clean(page("symmetries").run())
    at.selectbox(key="sym-run-tensor-0").set_value("layer.0.mlp.fc.weight").run()
    figures = [c for c in clean(at).get("plotly_chart") if "B aligned to A" in c.proto.spec]
    assert len(figures) == 1

    from symalign.models import canonicalize, load_model

    panels = [np.array(trace["z"]) for trace in json.loads(figures[0].proto.spec)["data"]]
    expected = [canonicalize(load_model(r)).tensors["layer.0.mlp.fc.weight"].double().numpy()
                for r in ("zoo:vit-digits/0", "zoo:vit-digits/1", tmp_path / "aligned")]
    assert all(np.allclose(p, e, atol=1e-6) for p, e in zip(panels, expected))  # A, B, aligned B, in that order
    a, b, aligned = panels
    assert np.linalg.norm(aligned - a) < np.linalg.norm(b - a)  # the matcher brought B's weights towards A's


def test_merge_page_merges_records_the_run_and_offers_the_zip(home):
    import io
    import zipfile

    from transformers import AutoModelForImageClassification

    at = clean(page("merge").run())
    at.selectbox(key="merge-how").set_value("regmean")
    at.number_input(key="merge-examples").set_value(16)
    at.number_input(key="merge-max-examples").set_value(128)
    at.checkbox(key="merge-background").uncheck()  # in this script run (the default is a job)
    assert at.checkbox(key="merge-toggle:qk:orthogonal").value  # the alignment's classes start at `all`
    at.checkbox(key="merge-toggle:residual:orthogonal").uncheck()  # Zhang et al.'s matching has no residual map
    at.button(key="merge-go").click().run()
    assert not clean(at).error, [e.value for e in at.error]
    (run,) = RunStore(home / "runs.sqlite").list(kind="merge")
    assert run.state == "done" and run.metrics["how"] == "regmean" and len(run.metrics["inputs"]) == 2
    classes = run.settings["alignment"]["classes"]
    assert classes["residual"] == "none" and classes["qk"] == "orthogonal" and classes["mlp"] == "perm"
    table = at.dataframe[0].value
    assert table["model"].tolist()[-1] == "merged"
    assert all(m.startswith("zoo:") for m in table["model"].tolist()[:2])  # the zoo's names, not absolute paths
    linked = page("merge")
    linked.query_params["run"] = run.id  # the result's link opens it in a fresh session
    linked = clean(linked.run())
    assert linked.dataframe[0].value["loss"].iloc[-1] == pytest.approx(run.metrics["merged"]["loss"])
    assert table["loss"].iloc[-1] == pytest.approx(run.metrics["merged"]["loss"])
    assert len(downloads(at)) == 1
    from symalign.models.io import checkpoint_zip

    with zipfile.ZipFile(io.BytesIO(checkpoint_zip(run.artifacts))) as archive:
        names = set(archive.namelist())
        assert {"config.json", "model.safetensors", "merge.json"} <= names
        archive.extractall(home / "unzipped")
    AutoModelForImageClassification.from_pretrained(home / "unzipped")  # the download loads with plain transformers
    history = clean(page("runs").run())
    assert "merge" in history.dataframe[0].value["kind"].tolist()


def test_merge_page_offers_mergekit_methods_with_their_parameters(home):
    pytest.importorskip("mergekit")
    at = clean(page("merge").run())
    at.selectbox(key="merge-how").set_value("slerp").run()
    at.number_input(key="merge-param:slerp:t").set_value(0.3)
    at.number_input(key="merge-max-examples").set_value(64)
    at.checkbox(key="merge-background").uncheck()  # in this script run (the default is a job)
    at.button(key="merge-go").click().run()
    assert not clean(at).error, [e.value for e in at.error]
    (run,) = RunStore(home / "runs.sqlite").list(kind="merge")
    assert run.metrics["how"] == "slerp" and run.metrics["parameters"] == {"t": 0.3}
    assert run.settings["parameters"] == {"t": 0.3}


def test_merge_page_fuses_by_optimal_transport_and_shows_what_the_plans_did_to_b(home):
    at = clean(page("merge").run())
    assert "ot-acts" not in at.selectbox(key="transport-align").options  # soft plans never carry task vectors
    at.selectbox(key="merge-align").set_value("ot-acts").run()
    at.selectbox(key="merge-ot-solver").set_value("sinkhorn").run()
    at.number_input(key="merge-max-examples").set_value(128)
    at.checkbox(key="merge-background").uncheck()  # in this script run (the default is a job)
    at.button(key="merge-go").click().run()
    assert not clean(at).error, [e.value for e in at.error]
    (run,) = RunStore(home / "runs.sqlite").list(kind="merge")
    assert run.settings["align"] == "ot-acts" and run.settings["ot"] == {"solver": "sinkhorn", "reg": 0.08}
    table = at.dataframe[0].value
    carried = table[table["model"].str.endswith("as carried by the OT plans")]
    assert len(carried) == 1 and carried["loss"].iloc[0] == pytest.approx(run.metrics["carried"][0]["loss"])
    assert table["loss"].iloc[-1] == pytest.approx(run.metrics["merged"]["loss"])


def test_transport_tab_carries_the_zoo_fine_tune_and_records_the_run(home):
    at = clean(page("merge").run())
    at.text_input(key="transport-alpha").set_value("0,1")
    at.selectbox(key="transport-head-strategy").set_value("brute-force")  # TransFusion's Table 3 strategies
    at.checkbox(key="transport-per-block").check()  # and its residual, per block
    at.checkbox(key="transport-background").uncheck()  # in this script run (the default is a job)
    at.button(key="transport-go").click().run()
    assert not clean(at).error, [e.value for e in at.error]
    (run,) = RunStore(home / "runs.sqlite").list(kind="transport")
    assert run.settings["residual_per_block"] is True and run.metrics["residual_per_block"] is True
    assert run.models == ["zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits-flipped/0"]
    assert run.metrics["alpha"] == [0.0, 1.0] and run.metrics["task_loss"][1] < run.metrics["task_loss"][0]
    assert run.settings["alignment"]["head_cost"] == "brute-force"
    assert len(at.get("plotly_chart")) == 1 and len(downloads(at)) == 1
    support = at.dataframe[-1].value  # the support set's accuracy beside the task's
    assert support["support (original task) accuracy"].tolist() == pytest.approx(run.metrics["base_accuracy"])
    at.text_input(key="transport-alpha").set_value("0,one").run()
    at.checkbox(key="transport-background").uncheck()  # in this script run (the default is a job)
    at.button(key="transport-go").click().run()
    assert "does not parse" in clean(at).error[0].value  # one line, no traceback
    assert len(RunStore(home / "runs.sqlite").list(kind="transport")) == 1


@pytest.mark.slow
def test_transport_as_a_background_job_shows_its_curve_when_it_ends(home):
    at = clean(page("merge").run())
    at.text_input(key="transport-alpha").set_value("0,1")
    at.checkbox(key="transport-background").check()
    at.button(key="transport-go").click().run()
    clean(at)
    job = wait_for_job(home, at.session_state["transport-last-job"])
    assert job.state == "done", job.error
    at.run()  # the live panel sees the job done and shows its result
    clean(at)
    (run,) = RunStore(home / "runs.sqlite").list(kind="transport")
    assert job.runs == [run.id] and run.metrics["task_loss"][1] < run.metrics["task_loss"][0]
    assert len(at.get("plotly_chart")) == 1 and len(downloads(at)) == 1


def test_compare_matchers_draws_one_bar_per_run_even_when_runs_share_a_label(home):
    """Two runs with the same label (two demos' "no alignment") are two bars, each its own barrier,
    never one bar of their sum (issue #43)."""
    from symalign.workflows.execute import barrier_run

    store = RunStore(home / "runs.sqlite")
    for examples in (32, 64):
        barrier_run("zoo:vit-digits/0", "zoo:vit-digits/1", points=3, max_examples=examples, store=store,
                    label="no alignment")
    runs = store.list(kind="barrier")
    at = page("compare").run()
    assert len(at.multiselect(key="compare-runs").value) == 1  # preselected: the newest of each method
    at = clean(at.multiselect(key="compare-runs").set_value([r.id for r in runs]).run())
    table = at.dataframe[0].value
    assert len(set(table["run"])) == 2 and all(t.startswith("no alignment [") for t in table["run"])  # told apart
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    bars = chart["data"]  # one bar each, side by side in the pair's group (issue #56: grouped by model pair)
    assert len(bars) == 2 and [b["x"] for b in bars] == [["vit-digits 0↔1"]] * 2
    assert sorted(b["y"][0] for b in bars) == pytest.approx(sorted(r.metrics["barrier"] for r in runs))
    assert all(any(r.id[-6:] in b["hovertext"][0] for b in bars) for r in runs)  # each run named in its hover
    assert [b["showlegend"] for b in bars] == [True, False]  # the method once in the legend


def test_compare_keeps_fitted_curves_apart_from_matchers(home):
    """Issue #70: an aligned Bézier curve read "weight: none", barrier 0.0000, in the vanilla line's colour
    group, so a reader concluded a matcher reached zero. Curves get a table of their own, named as curves
    with the alignment they started from; the chart holds the straight lines only."""
    from symalign.workflows.execute import barrier_run

    store = RunStore(home / "runs.sqlite")
    barrier_run("zoo:vit-digits/0", "zoo:vit-digits/1", points=3, max_examples=8, store=store)
    assert main(["curve", "zoo:vit-digits/0", "zoo:vit-digits/1", "--align", "weight",
                 "--steps", "2", "--points", "3", "--max-examples", "8"]) == 0
    (curve,) = store.list(kind="curve")
    assert curve.settings["align"]["method"] == "weight"  # the alignment it started from is recorded
    assert main(["curve", "zoo:vit-digits/0", "zoo:vit-digits/1", "--steps", "2", "--points", "3",
                 "--max-examples", "8"]) == 0  # and one between the models as they are
    at = clean(page("compare").run())
    lines, curves = (t.value for t in at.dataframe)
    assert list(lines["method"]) == ["none"] and "curve" not in " ".join(lines["run"])
    assert list(curves["curve"]) == ["curve (Bézier), unaligned", "curve (Bézier), aligned by weight (all)"]
    assert curves["curve barrier"][1] == pytest.approx(curve.metrics["barrier"])
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    assert len(chart["data"]) == 1  # the straight line's bar alone
    interp = clean(page("interpolation").run())
    assert [o.startswith("vanilla") for o in interp.multiselect(key="interp-runs").options] == [True]
    assert any("fitted-curve run" in c.value for c in interp.caption)


def test_run_history_shows_the_barriers_first_and_settings_as_a_table(home):
    """The history's first columns are the run and its barriers (loss and accuracy), and a run's
    settings read as rows of name and value, nested keys joined by dots (issue #43)."""
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--barrier", "--max-sweeps", "1",
                 "--out", str(home.parent / "aligned")]) == 0
    (run,) = RunStore(home / "runs.sqlite").list(kind="align")
    at = clean(page("runs").run())
    table = at.dataframe[0].value
    assert list(table.columns[:5]) == ["id", "kind", "method", "barrier", "accuracy_barrier"]
    assert table["barrier"].iloc[0] == pytest.approx(run.metrics["barrier"])
    settings = at.dataframe[1].value.set_index("name")["value"]
    assert settings["config.classes.mlp"] == "perm" and settings["config.max_sweeps"] == "1"
    assert settings["points"] == str(run.settings["points"])


def test_align_opens_on_the_demo_pair(home):
    at = clean(page("align").run())
    assert at.selectbox(key="align-a").value.endswith("vit-digits/0") or "vit-digits/0" in at.selectbox(
        key="align-a").value
    assert "vit-digits/1" in at.selectbox(key="align-b").value and not at.error


def test_a_method_has_one_colour_on_every_page(home):
    """'no alignment' and weight matching keep their colours from Interpolation to Compare matchers and the
    history (issue #43: no alignment was blue on one page and red on the next)."""
    from symalign.plots.colours import METHOD_COLOURS

    assert main(["barrier", "zoo:vit-digits/0", "zoo:vit-digits/1", "--points", "3", "--max-examples", "32"]) == 0
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--barrier", "--max-sweeps", "1",
                 "--out", str(home.parent / "aligned")]) == 0
    seen = {}
    for name in ("interpolation", "compare"):
        at = clean(page(name).run())
        (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
        for trace in chart["data"]:
            colour = (trace.get("line") or {}).get("color") or (trace.get("marker") or {}).get("color")
            seen.setdefault(name, []).append(colour)
    assert METHOD_COLOURS["none"] in seen["interpolation"] and METHOD_COLOURS["weight"] in seen["interpolation"]
    assert set(seen["compare"]) == {METHOD_COLOURS["none"], METHOD_COLOURS["weight"]}  # a trace per method


@pytest.mark.slow
def test_where_the_barrier_lives_computes_each_view(home):
    """The page's three views on the ViT pair: a ranked group chart, the correlation curve and head map
    (a block chosen on a slider), the learned-vs-weight swap chart; none shows an exception."""
    at = clean(page("barrier_anatomy").run())
    at.selectbox(key="anatomy-a").set_value("zoo:vit-digits/0")
    at.selectbox(key="anatomy-b").set_value("zoo:vit-digits/1")
    at = clean(at.run())
    assert any("Compute" in i.value for i in at.info)
    at = clean(at.button(key="anatomy-go").click().run())
    assert len(at.get("plotly_chart")) == 1
    assert any("7 λ points on the first 64 evaluation examples" in c.value for c in at.caption)  # why it differs
    at.radio(key="anatomy-view").set_value("Feature correlations")
    at = clean(at.run())
    at = clean(at.button(key="anatomy-go").click().run())
    assert len(at.get("plotly_chart")) == 2
    at.radio(key="anatomy-view").set_value("Learned vs weight matching")
    at = clean(at.run())
    at.number_input(key="anatomy-steps").set_value(10)
    at = clean(at.button(key="anatomy-go").click().run())
    assert len(at.get("plotly_chart")) == 1 and not at.error


@pytest.mark.slow
def test_the_lambda_slider_shows_the_model_at_work_on_both_paths(home, tmp_path):
    from symalign.landscape.at_lambda import point_on_curve

    """Interpolation: the slider draws a marker on the curves, and beside them the model at λ continues
    a prompt on the unaligned and on the aligned path; at λ = 0 both are model A, so they agree, and
    halfway they differ (the aligned path is another model than the unaligned one)."""
    assert main(["align", "zoo:gpt-shakespeare/0", "zoo:gpt-shakespeare/1", "--classes", "all", "--barrier",
                 "--points", "5", "--out", str(tmp_path / "aligned")]) == 0  # λ = 0.25 and 0.5 among them
    at = clean(page("interpolation").run())
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert any(s.get("type") == "line" and s.get("x0") == 0.5 for s in spec["layout"]["shapes"])
    codes = [c.value for c in at.code if not c.value.startswith("http")]  # not the page's link
    assert len(codes) == 2 and codes[0] != codes[1] and all(c.startswith("ROMEO:") for c in codes)
    run = RunStore(home / "runs.sqlite").list(kind="align")[0]
    _, loss, accuracy = point_on_curve(run.curve, 0.5)
    shown = " ".join(c.value for c in at.caption)  # the aligned path's loss and accuracy at λ, from its curve
    assert f"at λ = 0.50: loss {loss:.3f}, accuracy {100 * accuracy:.1f}%" in shown
    at.slider(key="interp-lambda").set_value(0.0)
    at = clean(at.run())
    codes = [c.value for c in at.code if not c.value.startswith("http")]
    assert len(codes) == 2 and codes[0] == codes[1]  # both paths start at model A
    assert any("lambda=0" in c.value for c in at.code if c.value.startswith("http"))  # λ is in the link
    linked = page("interpolation")
    linked.query_params["lambda"] = "0.25"
    linked = clean(linked.run())
    assert linked.slider(key="interp-lambda").value == 0.25  # a link opens at its λ


def test_interpolation_draws_mean_and_std_bands_over_seed_pairs(home):
    for a, b in (("0", "1"), ("0", "2"), ("1", "2")):
        assert main(["barrier", f"zoo:vit-digits/{a}", f"zoo:vit-digits/{b}", "--points", "3",
                     "--max-examples", "8"]) == 0
    at = clean(page("interpolation").run())
    at.toggle(key="interp-bands").set_value(True)
    at.toggle(key="interp-log").set_value(True)
    at = clean(at.run())
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    names = [t.get("name") for t in chart["data"] if t.get("showlegend", True) and t.get("name")]
    assert names == ["none: none · vit-digits (n = 3)"] and chart["layout"]["yaxis"]["type"] == "log"


def test_bands_average_three_same_label_runs_over_three_pairs(home):
    """Issue #70: the quick grid's three cells share one label ("quick vit-digits: ..."); the runs picker
    merged them into one (a multiselect keys its choices by their labels), so the band said n = 1 and the
    link kept one id. Each pill names its pair; the band averages the three pairs."""
    from symalign.workflows.execute import barrier_run

    store = RunStore(home / "runs.sqlite")
    for a, b in (("0", "1"), ("0", "2"), ("1", "2")):
        barrier_run(f"zoo:vit-digits/{a}", f"zoo:vit-digits/{b}", points=3, max_examples=8, store=store,
                    label="quick vit-digits: none")
    at = clean(page("interpolation").run())
    picker = at.multiselect(key="interp-runs")
    assert len(picker.value) == 3
    pills = [picker.format_func(v) for v in picker.value]
    assert len(set(pills)) == 3 and {p.rsplit(" · ", 1)[1] for p in pills} == {"vit-digits 0↔1", "vit-digits 0↔2",
                                                                                  "vit-digits 1↔2"}
    at.toggle(key="interp-bands").set_value(True)
    at = clean(at.run())
    (chart,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    names = [t.get("name") for t in chart["data"] if t.get("showlegend", True) and t.get("name")]
    assert names == ["none: none · vit-digits (n = 3)"]
    assert any("3 runs in 1 group" in c.value for c in at.caption)
    link = next(c.value for c in at.code if c.value.startswith("http"))
    assert all(r.id in link for r in store.list())


def test_links_open_aligns_and_simplexs_results(home, tmp_path):
    """Issue #56: Align and Simplex results are addressable: ?run= on Align, ?runs= on Simplex open them
    in a fresh session; an unknown id is one clear warning."""
    assert main(["align", "zoo:vit-digits/0", "zoo:vit-digits/1", "--barrier", "--max-sweeps", "1",
                 "--out", str(tmp_path / "aligned")]) == 0
    assert main(["simplex", "zoo:vit-digits/0", "zoo:vit-digits/1", "zoo:vit-digits/2", "--method", "none",
                 "--resolution", "2", "--max-examples", "8"]) == 0
    store = RunStore(home / "runs.sqlite")
    (aligned,), (simplex,) = store.list(kind="align"), store.list(kind="simplex")
    at = page("align")
    at.query_params["run"] = aligned.id
    at = clean(at.run())
    assert {m.label: m.value for m in at.metric}["barrier after alignment"] == f"{aligned.metrics['barrier']:.4f}"
    assert any(f"run={aligned.id}" in c.value for c in at.code if c.value.startswith("http"))  # its own link
    lost = page("align")
    lost.query_params["run"] = "no-such-run"
    lost = clean(lost.run())
    assert any("no-such-run" in w.value for w in lost.warning) and not lost.metric
    shown = page("simplex")
    shown.query_params["runs"] = simplex.id
    shown = clean(shown.run())
    assert shown.multiselect(key="simplex-shown").value == [simplex.id]
    assert any(f"runs={simplex.id}" in c.value for c in shown.code if c.value.startswith("http"))


def test_the_projector_view_lives_in_the_address(home):
    """Issue #56: a reload (a new session on the same address) keeps the projector view, it enlarges the
    page's text too, and turning it off takes it out of the address."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["view"] = "projector"
    at = clean(at.run())
    assert at.session_state["view-projector"] is True and at.query_params["view"] in ("projector", ["projector"])
    assert any("font-size: 22px" in h.proto.body for h in at.get("html"))  # all text, not only figures
    at.toggle(key="view-projector").set_value(False)
    at = clean(at.run())
    assert "view" not in at.query_params and not any("font-size: 22px" in h.proto.body for h in at.get("html"))
    linked = page("runs")
    linked.session_state["view-projector"] = True
    assert main(["barrier", "zoo:vit-digits/0", "zoo:vit-digits/1", "--max-examples", "8", "--points", "3"]) == 0
    linked = clean(linked.run())
    assert any("view=projector" in c.value for c in linked.code if c.value.startswith("http"))  # links keep it


def test_the_projector_view_reaches_every_page_figure(home):
    at = page("symmetries")
    at.session_state["view-projector"] = True
    at = clean(at.run())
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert spec["layout"]["font"]["size"] >= 18
    plain = clean(page("symmetries").run())
    assert "size" not in json.loads(plain.get("plotly_chart")[0].proto.spec)["layout"].get("font", {})
    assert any(b.label == "download as HTML" for b in at.get("download_button"))


def test_a_compare_link_opens_the_same_runs_and_filters_in_a_fresh_session(home):
    """Issue #43: every page state has a permalink. Compare with two of three runs picked and a filter
    set puts both in the address; opening that address in a new session shows the same two runs."""
    for b in ("zoo:vit-digits/1", "zoo:vit-digits/2"):
        assert main(["barrier", "zoo:vit-digits/0", b, "--max-examples", "32", "--points", "3"]) == 0
    assert main(["barrier", "zoo:vit-digits/1", "zoo:vit-digits/2", "--max-examples", "32", "--points", "3"]) == 0
    runs = RunStore(home / "runs.sqlite").list()
    at = clean(page("compare").run())
    newest = max(runs, key=lambda r: r.created)
    assert at.multiselect(key="compare-runs").value == [newest.id]  # the newest of each method on the newest pair
    at.text_input(key="compare-model").set_value("vit-digits/0").run()
    picked = [r.id for r in runs if r.model_a == "zoo:vit-digits/0"][:1]
    at.multiselect(key="compare-runs").set_value(picked).run()
    (link,) = [c.value for c in clean(at).code if c.value.startswith("http")]
    assert "/compare?" in link and f"runs={picked[0]}" in link and "model=vit-digits%2F0" in link
    fresh = page("compare")
    for key, value in dict(at.query_params).items():
        fresh.query_params[key] = value
    fresh = clean(fresh.run())
    assert fresh.text_input(key="compare-model").value == "vit-digits/0"
    assert fresh.multiselect(key="compare-runs").value == picked
    assert len(fresh.dataframe[0].value) == 1  # the table holds the linked run alone


def test_the_machine_refusing_is_its_own_line_and_a_bug_is_still_called_one(home):
    """An OSError (a full disk, a read-only data folder) was shown as "symalign hit an internal error" with a
    traceback under "details for a bug report": the command line said the system's words in one line already."""
    script = """
import errno
import streamlit as st
from symalign.ui.widgets import user_errors
with user_errors():
    if st.session_state["fault"] == "disk":
        raise OSError(errno.ENOSPC, "No space left on device", "/data/runs/x")
    raise RuntimeError("a bug")
"""
    at = AppTest.from_string(script, default_timeout=60)
    at.session_state["fault"] = "disk"
    at.run()
    assert not at.exception and [e.value for e in at.error] == ["The system refused: No space left on device: "
                                                                 "/data/runs/x."]
    assert not at.expander
    at.session_state["fault"] = "bug"
    at.run()
    assert "internal error (RuntimeError: a bug)" in at.error[0].value and at.expander
