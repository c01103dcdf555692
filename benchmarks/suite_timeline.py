"""Where a test suite run's wall time went, per pytest-xdist worker: read the timeline that
`SYMALIGN_TEST_TIMELINE=FILE python -m pytest` writes (tests/conftest.py) and print each worker's busy
seconds, when it ran out of work, the modules it ran in order, and the work per module. With
`--dist loadscope` a module runs whole on one worker, so the suite's wall time is the busiest worker's,
not the work divided by the workers; this shows by how much they differ."""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path


def read(path: Path) -> tuple[list[tuple[str, float, float, str]], dict[str, float]]:
    """(worker, start, end, test id) per test, and each test's CPU seconds by test id."""
    rows, cpu = [], {}
    for line in path.read_text().splitlines():
        worker, start, end, used, nodeid = line.split("\t", 4)
        rows.append((worker, float(start), float(end), nodeid))
        cpu[nodeid] = float(used)
    return rows, cpu


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("timeline", type=Path)
    parser.add_argument("--top", type=int, default=15, help="modules and tests to list")
    args = parser.parse_args(argv)
    rows, cpu = read(args.timeline)
    t0, t1 = min(r[1] for r in rows), max(r[2] for r in rows)
    work = sum(r[2] - r[1] for r in rows)
    print(f"{len(rows)} tests, wall {t1 - t0:.0f} s (first start to last end), work {work:.0f} s")
    by_worker: dict[str, list] = defaultdict(list)
    for r in rows:
        by_worker[r[0]].append(r)
    for worker, mine in sorted(by_worker.items()):
        mine.sort(key=lambda r: r[1])
        busy = sum(r[2] - r[1] for r in mine)
        done = mine[-1][2]
        print(f"\n{worker}: busy {busy:.0f} s, done at {done - t0:.0f} s (idle for the last {t1 - done:.0f} s)")
        spans: list[list] = []  # consecutive tests of one module: [module, start, end, seconds]
        for _, start, end, nodeid in mine:
            module = nodeid.split("::")[0]
            if spans and spans[-1][0] == module:
                spans[-1][2], spans[-1][3] = end, spans[-1][3] + end - start
            else:
                spans.append([module, start, end, end - start])
        for module, start, end, seconds in spans:
            if seconds >= 10:
                print(f"  {start - t0:6.0f}–{end - t0:6.0f} s  {seconds:6.0f} s  {module}")
    per_module: dict[str, float] = defaultdict(float)
    for _, start, end, nodeid in rows:
        per_module[nodeid.split("::")[0]] += end - start
    cpu_module: dict[str, float] = defaultdict(float)
    for nodeid, used in cpu.items():
        cpu_module[nodeid.split("::")[0]] += used
    print(f"\nwork per module (wall s, CPU s; CPU in all: {sum(cpu.values()):.0f} s):")
    for module, seconds in sorted(per_module.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {seconds:6.0f} {cpu_module[module]:6.0f}  {module}")
    print("\nthe tests that use most CPU:")
    for nodeid, used in sorted(cpu.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"  {used:6.0f} s  {nodeid}")


if __name__ == "__main__":
    main()
