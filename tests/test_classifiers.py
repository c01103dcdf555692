"""Sequence classifiers on labelled text (issue #42 item 4): a BertForSequenceClassification pair (and
a GPT-2 one) aligned with every admissible class keeps its logits, and is measured on the user's CSV:
each model reads the sentences through its own tokenizer and the labels through its own config, the
loss is transformers' own on those sentences, the JSON carries the accuracy barrier, and a label the
model does not know is one line."""

from __future__ import annotations

import csv
import json

import pytest
import torch

from symalign.cli import main
from symalign.data import load_data
from symalign.data.text import char_tokenizer
from symalign.errors import SymalignError
from symalign.landscape.evaluate import evaluate
from symalign.models import load_model, save_model
from symalign.models.tiny import random_model, tiny_config

LINES = [line for line in load_data("shakespeare").text[:60_000].split("\n") if len(line) > 3][:400]


def genre(line: str) -> int:
    """A label the sentence determines: its length in three bins."""
    return 0 if len(line) < 25 else 1 if len(line) < 40 else 2


@pytest.fixture(scope="module")
def pair(tmp_path_factory, request):
    """Two random classifiers of one family (3 labels), saved with a character tokenizer."""
    family = getattr(request, "param", "bert-classifier")
    root = tmp_path_factory.mktemp(family)
    tokenizer = char_tokenizer(load_data("shakespeare").text)
    folders = []
    for seed in (1, 2):
        config = tiny_config(family, layers=2, width=32, heads=4, mlp=48, vocab=len(tokenizer), context=64, labels=3)
        folder = root / f"m{seed}"
        save_model(random_model(config, seed=seed), folder)
        tokenizer.save_pretrained(str(folder))
        folders.append(folder)
    return folders


@pytest.fixture(scope="module")
def sentences(tmp_path_factory):
    path = tmp_path_factory.mktemp("csv") / "lines.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence", "y"])
        writer.writerows([(line, genre(line)) for line in LINES])
    return path


@pytest.mark.parametrize("pair", ["bert-classifier", "gpt2-classifier"], indirect=True)
def test_an_aligned_classifier_keeps_its_logits_and_is_measured_on_a_csv(pair, sentences, tmp_path, capsys):
    assert main(["align", str(pair[0]), str(pair[1]), "--classes", "all", "--barrier", "--data", f"csv:{sentences}",
                 "--text-column", "sentence", "--label-column", "y",  # the same as csv:PATH?text=sentence&label=y
                 "--out", str(tmp_path / "aligned"), "--json", "--no-record"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["function_gap_vs_b"] < 1e-5  # logits of the classifier, one row of label scores per sentence
    assert summary["barrier"] >= 0 and 0 <= summary["accuracy_barrier"] <= 100
    assert summary["distance_after"] < summary["distance_before"]
    assert main(["barrier", str(pair[0]), str(pair[1]), "--label-column", "y", "--no-record"]) == 2
    assert "--label-column names a column of --data" in capsys.readouterr().err


def test_the_loss_is_transformers_own_on_the_users_sentences(pair, sentences):
    """The data path checked from outside: transformers' tokenizer and model on the evaluation rows."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    data = load_data(f"csv:{sentences}?text=sentence&label=y")
    model = load_model(str(pair[0]))
    metrics = evaluate(model, data)
    texts = [t for t, _, _ in data.eval_rows]
    labels = torch.tensor([int(y) for _, _, y in data.eval_rows])
    assert sorted(texts + [t for t, _, _ in data.train_rows]) == sorted(LINES)  # every row, once
    tokenizer = AutoTokenizer.from_pretrained(str(pair[0]))
    tokenizer.pad_token = tokenizer.convert_ids_to_tokens(0)
    hf = AutoModelForSequenceClassification.from_pretrained(str(pair[0])).eval()
    with torch.no_grad():
        batch = tokenizer(texts, padding="longest", truncation=True, max_length=64, return_tensors="pt")
        logits = hf(**batch).logits
    assert metrics.loss == pytest.approx(float(torch.nn.functional.cross_entropy(logits, labels)), rel=1e-4)
    assert metrics.accuracy == pytest.approx(float((logits.argmax(-1) == labels).float().mean()), abs=1e-6)


def test_labels_the_model_does_not_know_are_one_line(pair, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(json.dumps({"text": line, "label": genre(line) + 1}) for line in LINES[:50]))
    assert main(["barrier", str(pair[0]), str(pair[1]), "--data", f"jsonl:{bad}", "--points", "3", "--no-record"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "label 3 is not a class of the model (it has 3: 0-2)" in err
    named = tmp_path / "named.tsv"
    named.write_text("text\tlabel\n" + "\n".join(f"{line}\t{['short', 'mid', 'long'][genre(line)]}"
                                                 for line in LINES[:50]))
    with pytest.raises(SymalignError, match="names no labels"):
        load_data(f"tsv:{named}").check_model(load_model(str(pair[0])))
    config = json.loads((pair[0] / "config.json").read_text())  # a model that names its classes reads names
    config["label2id"] = {"short": 0, "mid": 1, "long": 2}
    config["id2label"] = {"0": "short", "1": "mid", "2": "long"}
    named_model = tmp_path / "named-model"
    named_model.mkdir()
    for f in pair[0].iterdir():
        (named_model / f.name).write_bytes(f.read_bytes())
    (named_model / "config.json").write_text(json.dumps(config))
    by_name = evaluate(load_model(str(named_model)), load_data(f"tsv:{named}"))
    numbered = tmp_path / "numbered.tsv"
    numbered.write_text("text\tlabel\n" + "\n".join(f"{line}\t{genre(line)}" for line in LINES[:50]))
    assert by_name.loss == pytest.approx(evaluate(load_model(str(pair[0])), load_data(f"tsv:{numbered}")).loss)
    with pytest.raises(SymalignError, match="no label column"):
        load_data(f"csv:{tmp_path / 'x.csv'}" if (tmp_path / "x.csv").write_text("text,kind\na,1\n") else "")
