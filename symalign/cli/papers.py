"""`symalign paper [TABLE]`: the papers' tables as the registry holds them (symalign.papers): each
table's setting, every value it prints, its claims in its words, and the command that runs it on the zoo."""

from __future__ import annotations

from symalign.cli.common import add_max_examples_flag


def add_paper(sub) -> None:
    from symalign.papers import TABLES

    p = sub.add_parser("paper", help="the papers' tables: setting, printed values, claims, and how the zoo runs them")
    p.add_argument("table", nargs="?", choices=list(TABLES), help="one table (default: list them all)")
    p.add_argument("--run", action="store_true",
                   help="run the table on a zoo family and record it as a `paper` run (the Ablations page shows it)")
    p.add_argument("--family", help="the zoo family to run it on (default: the table's first)")
    add_max_examples_flag(p, "evaluation examples per measurement (default: all)")
    p.set_defaults(func=cmd_paper)


def cmd_paper(args) -> None:
    from symalign.papers import TABLES, paper_table

    if args.table is None:
        for key, table in TABLES.items():
            print(f"{key:<20} {table.paper}, {table.name}" + (f"  (symalign sweep --preset {table.preset})"
                                                              if table.preset else ""))
        return
    table = paper_table(args.table)
    if args.run:
        return run_table(args)
    print(f"{table.paper}, {table.name}\n")
    print(f"Setting: {table.setting}\n")
    if table.rows:
        width = max(len(r.shown) for r in table.rows) + 2
        print(" " * width + "".join(f"{c:>18}" for c in table.columns))
        for row in table.rows:
            print(f"{row.shown:<{width}}" + "".join(f"{format(v, table.fmt):>18}" for v in row.numbers))
        if table.plus_minus:
            print(f"\n± is {table.plus_minus}.")
    else:
        print("(a figure: no values printed)")
    for claim in table.claims:
        print(f"\nClaim: \"{claim.quote}\"\n  decided on the zoo by: {claim.decided_by}")
    for note in table.notes:
        print(f"\nNote: {note}")
    print(f"\nOn the zoo: {table.zoo}")
    if table.preset:
        print(f"Run it: symalign sweep --preset {table.preset} --family FAMILY")


def run_table(args) -> None:
    import sys

    from symalign.cli.common import Bar
    from symalign.runs import RunStore
    from symalign.sweeps.paper_tables import FAMILIES, check_family, paper_table_run

    family = args.family or FAMILIES[args.table][0]
    check_family(args.table, family)  # before the history is opened: bad input writes nothing
    with Bar(args.table) as bar:
        run_id = paper_table_run(args.table, family, args.max_examples, store=RunStore(), source="cli",
                                 progress=lambda phase, done, total, *note: bar(done, total, phase=phase,
                                                                             note=note[0] if note else None))
    run = RunStore().get(run_id)
    print(run.metrics["text"])
    print(f"recorded as run {run_id}", file=sys.stderr)


COMMANDS = (add_paper,)
