"""Run every registered paper table on its first zoo family and keep what the app shows of each run in
docs/results/records/paper-runs.json: the run's settings and its recorded text (ours beside the paper's,
the verdicts). The browser test of the Ablations page opens every table on these runs.

    python -m research.docgen.paper_runs [--only KEY ...] [--max-examples N]

Tables already recorded in the file are kept unless named with --only. Each run goes through the public
API (`symalign.sweeps.paper_tables.paper_table_run`) into the run history of $SYMALIGN_HOME, so sweeps the
report already ran there are reused."""

from __future__ import annotations

import argparse
import json
import time

from research.docgen.records import FOLDER
from symalign.papers import TABLES
from symalign.runs import RunStore
from symalign.sweeps.paper_tables import FAMILIES, paper_table_run

PATH = FOLDER / "paper-runs.json"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=list(TABLES), default=None)
    parser.add_argument("--max-examples", type=int, default=None)
    args = parser.parse_args(argv)
    kept = json.loads(PATH.read_text()) if PATH.is_file() else {}
    store = RunStore()
    for key in args.only or [k for k in TABLES if k not in kept]:
        family = FAMILIES[key][0]
        began = time.perf_counter()
        run_id = paper_table_run(key, family, args.max_examples, store=store, source="cli",
                                 progress=lambda phase, done, total, *note: None)
        run = store.get(run_id)
        kept[key] = {"family": family, "max_examples": args.max_examples, "seconds": round(time.perf_counter() - began),
                     "text": run.metrics["text"], "paper_table": run.metrics["paper_table"]}
        PATH.parent.mkdir(parents=True, exist_ok=True)
        PATH.write_text(json.dumps({k: kept[k] for k in TABLES if k in kept}, indent=1, ensure_ascii=False) + "\n")
        print(f"{key} on {family}: {kept[key]['seconds']} s", flush=True)


if __name__ == "__main__":
    main()
