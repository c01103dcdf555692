"""Weight matching of billion-parameter checkpoints streamed from their safetensors files: peak memory (the
process tree's resident set as the OS reports it, anonymous and file-backed apart), time against the cost-product
floor, and the progress lines a log gets.

    python -m benchmarks.streamed_scale --shape llama-1b [--max-sweeps 2] [--work DIR] [--check]
    python -m benchmarks.streamed_scale --shape depth       # 16 against 32 layers at one width: the same peak?

Shapes (random weights, bf16 files in shards of about 1 GB, built once in --work): llama-1b is Llama-3.2-1B's
(hidden 2048, 16 layers, 32 heads, 8 key-value heads, MLP 8192, vocabulary 128,256, tied embeddings: 1.24B
parameters); llama-3b Llama-3.2-3B's (hidden 3072, 28 layers, 24 heads, 8 key-value heads, MLP 8192, head size 128:
3.2B); llama-8b Llama-3-8B's (hidden 4096, 32 layers, 32 heads, 8 key-value heads, MLP 14336, untied head: 8.0B;
16 GB a model on disk); depth builds 16- and 32-layer models of hidden 1024, MLP 4096, vocabulary 32,000. B is A
with every MLP's units and every layer's key/value heads permuted and noise of 10% of each tensor's scale added:
a pair whose alignment has something to find. `symalign align A B --method weight --classes all` runs as a user
would, its stderr a pipe (a log), with SYMALIGN_PROGRESS_SECONDS=30. `--check` then loads B and applies the written
transform in memory (float32) to measure B's function kept on a batch (relative gap), apart from the run's peak.

The floor is one sweep's cost products (each MLP's [m, m] cost over its three tensors, the residual's [d, d]
correlation over every tensor it touches, the heads' circuits) at the machine's measured float32 matmul speed
(benchmarks.machine), times the sweeps run."""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch
from safetensors.torch import save_file

from benchmarks.machine import describe, matmul_gflops

SHAPES = {
    "llama-1b": dict(hidden_size=2048, num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                     intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True, head_dim=64),
    "llama-3b": dict(hidden_size=3072, num_hidden_layers=28, num_attention_heads=24, num_key_value_heads=8,
                     intermediate_size=8192, vocab_size=128256, tie_word_embeddings=True, head_dim=128),
    "llama-8b": dict(hidden_size=4096, num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                     intermediate_size=14336, vocab_size=128256, tie_word_embeddings=False, head_dim=128),
    "depth-16": dict(hidden_size=1024, num_hidden_layers=16, num_attention_heads=16, num_key_value_heads=4,
                     intermediate_size=4096, vocab_size=32000, tie_word_embeddings=True, head_dim=64),
    "depth-32": dict(hidden_size=1024, num_hidden_layers=32, num_attention_heads=16, num_key_value_heads=4,
                     intermediate_size=4096, vocab_size=32000, tie_word_embeddings=True, head_dim=64),
}
SHARD = 1 << 30


def tensors_of(shape: dict) -> list[tuple[str, tuple[int, ...]]]:
    """The Hugging Face names and shapes of a Llama checkpoint (tied: no lm_head)."""
    d, m, dh = shape["hidden_size"], shape["intermediate_size"], shape["head_dim"]
    q, kv = shape["num_attention_heads"] * dh, shape["num_key_value_heads"] * dh
    out = [("model.embed_tokens.weight", (shape["vocab_size"], d))]
    for i in range(shape["num_hidden_layers"]):
        p = f"model.layers.{i}."
        out += [(p + "input_layernorm.weight", (d,)), (p + "self_attn.q_proj.weight", (q, d)),
                (p + "self_attn.k_proj.weight", (kv, d)), (p + "self_attn.v_proj.weight", (kv, d)),
                (p + "self_attn.o_proj.weight", (d, q)), (p + "post_attention_layernorm.weight", (d,)),
                (p + "mlp.gate_proj.weight", (m, d)), (p + "mlp.up_proj.weight", (m, d)),
                (p + "mlp.down_proj.weight", (d, m))]
    head = [] if shape["tie_word_embeddings"] else [("lm_head.weight", (shape["vocab_size"], d))]
    return out + [("model.norm.weight", (d,))] + head


def _value(name: str, size: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
    if len(size) == 1:
        return 1.0 + 0.1 * torch.randn(size, generator=generator)
    return torch.randn(size, generator=generator) / size[-1] ** 0.5


def _moved(name: str, t: torch.Tensor, shape: dict, perms: dict) -> torch.Tensor:
    """B's tensor: A's with the layer's MLP units and key/value heads permuted (a symmetry), then noise."""
    if ".layers." in name:
        layer = int(name.split(".")[2])
        mlp, heads = perms[layer]
        dh, group = shape["head_dim"], shape["num_attention_heads"] // shape["num_key_value_heads"]
        if "gate_proj" in name or "up_proj" in name:
            t = t[mlp]
        elif "down_proj" in name:
            t = t[:, mlp]
        elif "k_proj" in name or "v_proj" in name:
            t = t.reshape(len(heads), dh, -1)[heads].reshape(t.shape)
        elif "q_proj" in name:
            t = t.reshape(len(heads), group * dh, -1)[heads].reshape(t.shape)
        elif "o_proj" in name:
            t = t.reshape(t.shape[0], len(heads), group * dh)[:, heads].reshape(t.shape)
    if t.dim() == 1:
        return t
    return t + 0.1 * t.std() * torch.randn(t.shape, generator=torch.Generator().manual_seed(len(name)))


def build(folder: Path, shape: dict, moved: bool) -> None:
    """A checkpoint of `shape` (B when `moved`), tensor by tensor, one shard in memory at a time."""
    if (folder / "model.safetensors.index.json").is_file():
        return
    from transformers import LlamaConfig

    folder.mkdir(parents=True, exist_ok=True)
    perms = {i: (torch.randperm(shape["intermediate_size"], generator=torch.Generator().manual_seed(i)),
                 torch.randperm(shape["num_key_value_heads"], generator=torch.Generator().manual_seed(1000 + i)))
             for i in range(shape["num_hidden_layers"])}
    generator = torch.Generator().manual_seed(0)
    shard: dict[str, torch.Tensor] = {}
    files: list[dict[str, torch.Tensor]] = []
    weight_map: dict[str, str] = {}
    names = tensors_of(shape)

    def flush() -> None:
        if shard:
            name = f"part-{len(files)}.safetensors"
            save_file(shard, str(folder / name), metadata={"format": "pt"})
            weight_map.update({k: name for k in shard})
            files.append({})
            shard.clear()

    for name, size in names:
        value = _value(name, size, generator)
        shard[name] = (_moved(name, value, shape, perms) if moved else value).to(torch.bfloat16)
        if sum(v.numel() * 2 for v in shard.values()) >= SHARD:
            flush()
    flush()
    total = len(files)
    final = {f"part-{i}.safetensors": f"model-{i + 1:05d}-of-{total:05d}.safetensors" for i in range(total)}
    for old, new in final.items():
        (folder / old).rename(folder / new)
    (folder / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {k: final[v] for k, v in weight_map.items()}}))
    LlamaConfig(**shape, hidden_act="silu", max_position_embeddings=2048, rms_norm_eps=1e-5,
                dtype=torch.bfloat16, architectures=["LlamaForCausalLM"]).save_pretrained(str(folder))


def tree_memory(pid: int) -> tuple[int, int]:
    """(anonymous, file-backed) resident bytes of `pid` and its descendants."""
    anon = file = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
            for task in Path(f"/proc/{p}/task").iterdir():
                stack += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        anon += int(fields.get("RssAnon", "0 kB").split()[0]) * 1024
        file += sum(int(fields.get(k, "0 kB").split()[0]) * 1024 for k in ("RssFile", "RssShmem"))
    return anon, file


def run_measured(argv: list[str], log: Path) -> dict:
    """Run `argv`, stderr into `log`, sampling the tree's memory every 0.2 s; the peaks and the wall time."""
    env = dict(os.environ, SYMALIGN_PROGRESS_SECONDS="30", OMP_NUM_THREADS=str(os.cpu_count() or 2))
    peaks = {"total": 0, "anon": 0, "file": 0}
    with log.open("w") as err:
        began = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=env)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                anon, file = tree_memory(proc.pid)
                peaks.update(total=max(peaks["total"], anon + file), anon=max(peaks["anon"], anon),
                             file=max(peaks["file"], file))
                time.sleep(0.2)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        out, _ = proc.communicate()
        done.set()
        sampler.join()
    return dict(peaks, seconds=time.perf_counter() - began, rc=proc.returncode, stdout=out)


def floor_flops(shape: dict) -> float:
    """One sweep's cost products (multiply-adds × 2)."""
    d, m, layers = shape["hidden_size"], shape["intermediate_size"], shape["num_hidden_layers"]
    dh, kv = shape["head_dim"], shape["num_key_value_heads"]
    per_layer = [t for n, t in tensors_of(shape) if ".layers.0." in n]
    mlp = 2 * m * m * 3 * d
    residual = 2 * d * sum(math.prod(t) for t in per_layer)
    heads = 2 * kv * kv * dh * dh * 2 * (d + 1) + 2 * 2 * kv * dh * dh * d  # circuits, then QK/VO maps
    return layers * (mlp + residual + heads)


def function_gap(b: Path, out: Path) -> float:
    """Relative max |Δlogit| between B and B under the written transform, in memory (float32)."""
    from symalign.models import canonicalize, load_model, outputs, random_inputs, transformed
    from symalign.symmetry.transform import Transform

    model = canonicalize(load_model(b), consume=True)
    inputs = random_inputs(model, n=2)
    before = outputs(model, inputs)
    after = outputs(transformed(model, Transform.load(out / "transforms.safetensors"), consume=True), inputs)
    return float((after - before).abs().max() / before.abs().max())


def measure(work: Path, name: str, sweeps: int, check: bool, gflops: float, stream: str | None = None,
            device: str = "cpu") -> dict:
    shape = SHAPES[name]
    a, b, out = work / f"{name}-a", work / f"{name}-b", work / f"{name}-aligned-{stream or 'default'}"
    build(a, shape, moved=False)
    build(b, shape, moved=True)
    argv = [sys.executable, "-m", "symalign.cli", "align", str(a), str(b), "--method", "weight", "--classes", "all",
            "--max-sweeps", str(sweeps), "--out", str(out), "--no-record", "--json", "--device", device,
            "--stream", stream or ("always" if name.startswith("depth") else "auto")]  # depth: below auto's 1B
    log = work / f"{name}-{stream or 'default'}.log"
    row = run_measured(argv, log)
    if row["rc"]:
        raise SystemExit(f"{name}: symalign failed; see {log}")
    summary = json.loads(row.pop("stdout"))
    parameters = sum(math.prod(t) for _, t in tensors_of(shape))
    report = json.loads((out / "alignment.json").read_text())
    sweep_seconds = [s["seconds"] for s in report["sweeps"]]
    floor = summary["sweeps"] * floor_flops(shape) / (gflops * 1e9)
    row.update(shape=name, parameters=parameters, bytes_per_parameter=row["total"] / parameters,
               sweeps=summary["sweeps"], distance=[summary["distance_before"], summary["distance_after"]],
               match_seconds=summary["seconds"], start_seconds=next((s for s in sweep_seconds if s > 0), 0.0),
               floor_seconds=floor, over_floor=summary["seconds"] / floor if floor else None,
               progress_lines=sum(1 for line in log.read_text().splitlines() if line.strip()), stream=stream,
               streamed=summary.get("streamed"), function_gap=summary.get("function_gap_vs_b"))
    if check:
        row["full_function_gap"] = function_gap(b, out)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=["llama-1b", "llama-3b", "llama-8b", "depth"], default="depth")
    parser.add_argument("--device", default="cpu", help="where the cost products run (cuda: layers streamed to it)")
    parser.add_argument("--max-sweeps", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path("/tmp/symalign-streamed"))
    parser.add_argument("--check", action="store_true", help="also measure B's function kept, in memory")
    parser.add_argument("--compare", action="store_true",
                        help="also run the first shape in memory (--stream never), side by side")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    threads = torch.get_num_threads()
    gflops = matmul_gflops(threads, args.device)
    print(describe(threads, args.device, gflops))
    names = ["depth-16", "depth-32"] if args.shape == "depth" else [args.shape]
    rows = [measure(args.work, n, args.max_sweeps, args.check, gflops, device=args.device) for n in names]
    if args.compare:
        rows.append(measure(args.work, names[0], args.max_sweeps, args.check, gflops, "never", args.device))
    for r in rows:
        where = " in memory" if r["stream"] == "never" else ""
        print(f"{r['shape']}{where}: {r['parameters'] / 1e9:.2f}B parameters, peak {r['total'] / 2**30:.2f} GiB "
              f"({r['bytes_per_parameter']:.2f} B/parameter; anonymous {r['anon'] / 2**30:.2f} GiB, file-backed "
              f"{r['file'] / 2**30:.2f} GiB), {r['seconds']:.0f} s wall, {r['sweeps']} sweeps in "
              f"{r['match_seconds']:.0f} s = {r['over_floor']:.1f}× the cost-product floor ({r['floor_seconds']:.0f} s "
              f"at {gflops:.0f} GFLOP/s; start {r['start_seconds']:.0f} s), distance {r['distance'][0]:.3f} -> "
              f"{r['distance'][1]:.3f}, {r['progress_lines']} progress lines, function gap {r['function_gap']:.1e}"
              + (f", full model {r['full_function_gap']:.1e} relative" if "full_function_gap" in r else ""))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
