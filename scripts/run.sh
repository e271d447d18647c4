#!/usr/bin/env bash
# The main job on a fresh Debian machine: install what is missing, build, quantize the
# default model (yolo-fastest-1.1-xl) with the shared calibration images, validate it on
# every labelled shared image, print the FP32 vs int8 table, write the package.
#     scripts/run.sh [extra yquant flags]      (YQ_DATA: the shared data, default ../shared)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
make -j"$(nproc)"
export YQ_DATA="${YQ_DATA:-../shared}"
bash scripts/check-data.sh
exec build/yquant --calib "$YQ_DATA/datasets/coco-mini/val2017_unlabelled/images" --bits 8 "$@"
