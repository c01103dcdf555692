"""The run history and the app that shares it."""

from __future__ import annotations

import sys

from symalign.cli.common import at_least, print_json
from symalign.errors import SymalignError


def add_runs(sub) -> None:
    p = sub.add_parser("runs", help="the run history shared with the app (in $SYMALIGN_HOME)")
    p.add_argument("action", nargs="?", default="list", choices=("list", "show", "delete", "rename", "tag"))
    p.add_argument("ids", nargs="*")
    p.add_argument("--label", help="rename: the run's new name ('' restores the generated one)")
    p.add_argument("--tags", nargs="*", help="tag: the run's tags (replacing its old ones; none clears them); "
                                             "list: only runs with all of these tags")
    p.add_argument("--kind", choices=("align", "barrier", "align-many", "simplex", "spectrum", "sweep", "merge",
                                      "transport", "curve"))
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
    if args.action in ("rename", "tag"):
        if not args.ids:
            raise SymalignError(f"runs {args.action} needs run ids (see `symalign runs list`)")
        if args.action == "rename" and args.label is None:
            raise SymalignError("runs rename ID --label TEXT")
        for run_id in args.ids:
            if args.action == "rename":
                store.rename(run_id, args.label)
            else:
                store.tag(run_id, args.tags or [])
            run = store.get(run_id)
            print(f"run {run_id}: {run.label or '(generated name)'}" + (f", tags {', '.join(run.tags)}"
                                                                       if run.tags else ""))
        return
    if args.action == "show":
        if not args.ids:
            raise SymalignError("runs show needs a run id (see `symalign runs list`)")
        print_json([vars(run) | {"state": run.state} for run in map(store.get, args.ids)])
        return
    runs = store.list(kind=args.kind, method=args.method, model=args.model)
    if args.tags:
        runs = [r for r in runs if set(args.tags) <= set(r.tags)]
    if args.json:
        print_json([vars(r) | {"state": r.state} for r in runs])
        return
    if not runs:
        print(f"no runs recorded in {store.path}")
    for r in runs:
        barrier = r.metrics.get("barrier")
        shown = f"barrier {barrier:.4f}" if barrier is not None else ""
        named = f"  “{r.label}”" if r.label else ""
        tags = f"  [{', '.join(r.tags)}]" if r.tags else ""
        print(f"{r.id}  {r.state:<11} {r.kind:<7} {r.method:<10} {r.model_a} ↔ {r.model_b}  {shown}{named}{tags}")


def add_app(sub) -> None:
    p = sub.add_parser("app", help="open the Streamlit app on the shipped zoo")
    p.add_argument("--port", type=at_least(1, at_most=65535), default=8501)
    p.add_argument("--headless", action="store_true", help="do not open a browser")
    p.add_argument("--share", action="store_true",
                   help="share the app with a room: listen on every interface, every visitor a guest (no host paths, "
                        "no training, deletes only their own runs, capped uploads and jobs; docs/app.md)")
    p.add_argument("--password", metavar="P", help="a passphrase every visitor gives before any page (with --share)")
    p.add_argument("--allow-training", action="store_true", help="with --share: guests may train CPU recipes")
    p.add_argument("--address", default=None,
                   help="the address to listen on (default: 127.0.0.1, this machine only; with --share every "
                        "interface). An address other than loopback without --share gives every visitor your rights")
    p.set_defaults(func=cmd_app)


def cmd_app(args) -> None:
    import os

    from symalign.errors import SymalignError
    from symalign.ui.access import Access, digest
    from symalign.ui.launch import LOOPBACK, QUIET_WELCOME, app_command, app_urls, check_port_free

    if args.allow_training and not args.share:
        raise SymalignError("--allow-training is for a shared app: add --share (the host may always train)")
    if args.password is not None and not args.password.strip():
        raise SymalignError("--password needs a non-empty passphrase")
    address = args.address or ("0.0.0.0" if args.share else LOOPBACK)
    check_port_free(address, args.port)
    policy = Access(guest=args.share, allow_training=args.allow_training,
                    password_sha256=digest(args.password) if args.password else None)
    command = app_command(port=args.port, headless=args.headless or args.share, address=address,
                          max_upload_mb=policy.upload_bytes_per_session >> 20 if args.share else 512)
    urls = app_urls(address, args.port)  # said here: Streamlit's own welcome is off (launch.QUIET_WELCOME)
    if args.share:
        print("symalign: sharing the app; every visitor is a guest (docs/app.md). Give out:", file=sys.stderr)
        for url in urls:
            print(f"  {url}", file=sys.stderr)
        if args.password:
            print("  (visitors give the passphrase before any page)", file=sys.stderr)
    else:
        if address not in (LOOPBACK, "localhost", "::1"):
            print(f"symalign: the app listens on {address}: anyone who can reach this machine can use it with your "
                  "rights (read and link its files, delete runs); use --share for a guest mode", file=sys.stderr)
        print(f"symalign: the app is at {', '.join(urls)} (Ctrl-C stops it)", file=sys.stderr)
    sys.stderr.flush()
    sys.stdout.flush()
    os.environ.update({**policy.environment(), **QUIET_WELCOME})
    os.execv(command[0], command)  # become the server: signals and exit codes reach streamlit itself


COMMANDS = (add_runs, add_app,)
