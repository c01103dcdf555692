"""Models: the shipped zoo with its metrics, your models, uploads, linked folders, training."""

import json
import shutil
from pathlib import Path

import streamlit as st

from symalign.models.upload import import_uploads
from symalign.train.loop import train
from symalign.train.recipes import RECIPES
from symalign.ui.completion import import_message, what_models_need
from symalign.ui.jobs import follow_job, resume_job, submit_job
from symalign.ui.model_tables import user_table, zoo_table
from symalign.ui.session import access, folder_bytes, heavy_work, own_uploads_dir, uploads_root
from symalign.ui.state import cached_model
from symalign.ui.widgets import StreamlitProgress, user_errors
from symalign.workspace import link_path, linked_paths, models_dir, unlink_path

st.title("Models")
policy = access()

st.subheader("The shipped zoo")
zoo, command = zoo_table()
st.caption("Trained on 2 CPU cores" + (f", each by `{command}` (RECIPE/SEED as in the model column, steps as shown)"
                                       if command else " by the commands shown")
           + "; metrics on each recipe's fixed evaluation split.")
st.dataframe(zoo, hide_index=True, width="stretch")

st.subheader("Your models")
table = user_table(cached_model)
if policy.guest:
    st.caption("This app is shared: you can use the models listed here and your own uploads; removing is the host's.")
if table.empty:
    st.info("No models of your own yet: upload one, link a local directory, or train a CPU recipe below.")
else:
    # the folder is the model's name (a linked one's, its path): a path column would push the table past the page
    st.dataframe(table.drop(columns="path"), hide_index=True, width="stretch")
    if not policy.guest:  # a shared app's guests never see a host path
        st.caption(f"Uploaded and trained models are folders in `{models_dir()}`.")
    doomed = "—" if policy.guest else st.selectbox("remove a model", ["—"] + list(table["path"]), key="remove-model")
    if doomed != "—" and st.button("remove", key="remove-model-go"):
        if doomed in linked_paths():
            unlink_path(doomed)  # a linked folder is the user's own: forget it, never delete it
        elif Path(doomed).parent == models_dir():
            shutil.rmtree(doomed, ignore_errors=True)
        st.rerun()
what_models_need()

upload_tab, link_tab, train_tab = st.tabs(["Upload", "Link a directory or hub id", "Train a CPU recipe"])

with upload_tab:
    st.markdown("A **zip of a Hugging Face model directory**, or **config.json + model.safetensors** "
                "(plus tokenizer files for text models). Pickled checkpoints (`.bin`, `.pt`) are refused: "
                "unpickling an untrusted file can run code.")
    files = st.file_uploader("model files", accept_multiple_files=True, key="upload-files",
                             type=["zip", "safetensors", "json", "txt", "model"])  # what it accepts (no pickles)
    name = st.text_input("name (optional)", key="upload-name")
    if policy.guest:
        st.caption(f"Guests may upload {policy.upload_bytes_per_session >> 20} MiB per session; your uploads are "
                   "listed in your model pickers only.")
    if st.button("Import", key="upload-go", disabled=not files):
        with user_errors():
            uploaded = [(f.name, f.getvalue()) for f in files]
            if policy.guest:
                policy.check_upload(sum(len(data) for _, data in uploaded), folder_bytes(own_uploads_dir()),
                                    folder_bytes(uploads_root()))
            folders = import_uploads(uploaded, own_uploads_dir() if policy.guest else models_dir(), name or None)
            names = " and ".join(f.name for f in folders)
            st.session_state["upload-said"] = (
                f"imported {names}: {'each is' if len(folders) > 1 else 'it is'} now in every model picker"
                + (" (a CLIPModel's two towers; `symalign align` aligns the pair)" if len(folders) > 1 else "")
                + ".\n\n" + "\n\n".join(import_message([str(f) for f in folders])))
            st.rerun()  # the new model in the table and in "what your models still need" above
    if "upload-said" in st.session_state:
        st.success(st.session_state.pop("upload-said"))

with link_tab:
    if policy.guest:
        st.info("This app is shared: linking a folder or a hub id is the host's (it would read the host's files).")
    else:
        st.markdown("Big checkpoints exceed upload limits: point symalign at a directory on this machine "
                    "(it is read in place, never copied or changed), or at a hub id `org/name` or "
                    "`org/name@revision` (from the Hugging Face cache; downloaded unless `HF_HUB_OFFLINE=1`).")
        path = st.text_input("directory or hub id", key="link-path")
        if st.button("Link", key="link-go", disabled=not path.strip()):
            with user_errors():
                cached_model(path.strip())  # refuses anything that is not a supported model, with the reason
                link_path(path.strip())
                st.success(f"linked {path.strip()}")


with train_tab:
    if not policy.can_train:
        st.info("Training is off for guests of this shared app (the host can allow it with "
                "`symalign app --share --allow-training`).")
    else:
        cpu = [n for n, r in RECIPES.items() if r.cpu]
        recipe = st.selectbox("recipe", cpu, key="train-recipe", format_func=lambda n: f"{n}: {RECIPES[n].description}")
        c1, c2 = st.columns(2)
        seed = c1.number_input("seed", 0, 10_000, 3, key="train-seed")
        steps = c2.number_input("steps", 1, 100_000, RECIPES[recipe].steps, key="train-steps")
        background = st.checkbox("train in the background", True, key="train-background",
                                 help="a job in a worker process: it goes on when you leave this page (see Jobs)")
        if st.button("Train", key="train-go", type="primary"):
            out = models_dir() / f"{recipe}-seed{seed}-{steps}steps"
            st.session_state["train-out"] = str(out)
            st.session_state.pop("train-last", None)
            with user_errors():
                if background:
                    st.session_state["train-last-job"] = submit_job(
                        "train", {"recipe": recipe, "seed": int(seed), "steps": int(steps), "out": str(out)},
                        label=f"train {out.name}")
                else:
                    with heavy_work("the training"):
                        bar = StreamlitProgress("training…")
                        train(recipe, int(seed), out, steps=int(steps), progress=lambda d, t, loss: bar("train", d, t))
                        bar.done()
                    st.session_state["train-last"] = []
        resume_job(("train",), "train-last")  # this browser's job still under way, after a reload
        if "train-last-job" in st.session_state:
            with user_errors():
                follow_job(st.session_state["train-last-job"], "train-last")
        if "train-last" in st.session_state and (Path(st.session_state["train-out"]) / "training.json").is_file():
            out = Path(st.session_state["train-out"])
            record = json.loads((out / "training.json").read_text())
            st.success(f"trained {out.name}: eval loss {record['eval_loss']:.4f}, accuracy "
                       f"{record['eval_accuracy']:.3f} in {record['train_seconds']:.0f} s")
