#!/usr/bin/env bash
# How results/calibration/amd-epyc-2vcpu/calibration.yaml was made (2026-11-24):
# five calibrations of Debian's redis-server 7.0.15 on the first reference host (a
# 2-vCPU AMD EPYC VM, the kind the project's CI runs on), a minute or more
# apart, and their medians. The host's speed drifts by 20-30 % over minutes (a
# VM's neighbours; nothing else ran in the VM), so one calibration alone is not
# the host's typical figure.
set -euo pipefail
cd "$(dirname "$0")"
for i in 1 2 3 4 5; do
  redsim calibrate --start --reps 5 --commands all --out run$i.yaml
  [ $i = 5 ] || sleep 60
done
redsim calibrate --combine run1.yaml run2.yaml run3.yaml run4.yaml run5.yaml --out calibration.yaml
