"""The run history and the app that shares it."""

from __future__ import annotations

import sys

from symalign.cli.common import print_json
from symalign.errors import SymalignError


def add_runs(sub) -> None:
    p = sub.add_parser("runs", help="the run history shared with the app (in $SYMALIGN_HOME)")
    p.add_argument("action", nargs="?", default="list", choices=("list", "show", "delete"))
    p.add_argument("ids", nargs="*")
    p.add_argument("--kind", choices=("align", "barrier", "align-many", "simplex", "spectrum", "sweep", "merge", "transport"))
    p.add_argument("--method")
    p.add_argument("--model", help="only runs with this text in either model reference")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_runs)


def cmd_runs(args) -> None:
    from symalign.runs import RunStore

    store = RunStore()
    if args.action == "delete":
        for run_id in args.ids:
            store.delete(run_id)
            print(f"deleted run {run_id}")
        return
    if args.action == "show":
        if not args.ids:
            raise SymalignError("runs show needs a run id (see `symalign runs list`)")
        print_json([vars(run) | {"state": run.state} for run in map(store.get, args.ids)])
        return
    runs = store.list(kind=args.kind, method=args.method, model=args.model)
    if args.json:
        print_json([vars(r) | {"state": r.state} for r in runs])
        return
    if not runs:
        print(f"no runs recorded in {store.path}")
    for r in runs:
        barrier = r.metrics.get("barrier")
        shown = f"barrier {barrier:.4f}" if barrier is not None else ""
        print(f"{r.id}  {r.state:<11} {r.kind:<7} {r.method:<10} {r.model_a} ↔ {r.model_b}  {shown}")


def add_app(sub) -> None:
    p = sub.add_parser("app", help="open the Streamlit app on the shipped zoo")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--headless", action="store_true", help="do not open a browser")
    p.add_argument("--address", default="127.0.0.1",
                   help="the address to listen on (default: this machine only; 0.0.0.0 opens it to the network, "
                        "where every visitor can read and link the host's files and delete runs)")
    p.set_defaults(func=cmd_app)


def cmd_app(args) -> None:
    import os

    from symalign.ui.launch import app_command

    command = app_command(port=args.port, headless=args.headless, address=args.address)
    if args.address not in ("127.0.0.1", "localhost", "::1"):
        print(f"symalign: the app listens on {args.address}: anyone who can reach this machine can use it with your "
              "rights (read and link its files, delete runs); there is no guest mode yet", file=sys.stderr)
    sys.stdout.flush()
    os.execv(command[0], command)  # become the server: signals and exit codes reach streamlit itself


COMMANDS = (add_runs, add_app,)
