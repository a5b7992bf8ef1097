#!/usr/bin/env bash
# How results/calibration/reference-host/calibration.yaml was made: full
# calibrations of Debian's redis-server 7.0.15 on the reference host (a 2-vCPU
# Intel Xeon VM, the kind the project's CI runs on), a minute or more apart,
# on two days (run1-5 on 2026-11-28, run6-8 on 2026-11-29), and their medians.
# The caches part is left out of each run (its dataset sweep takes ~4.5 min;
# the one made on this VM is results/validation/caches-sweep/).
#   bash make.sh 1 2 3 4 5      # one day's runs
#   bash make.sh 6 7 8          # the next day's
#   bash make.sh combine        # the medians of every run*.yaml here
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = combine ]; then
  redsim calibrate --combine run[0-9]*.yaml --out calibration.yaml
  exit
fi
for i in "$@"; do
  redsim calibrate --start --reps 5 --commands all --skip caches --out run$i.yaml
  [ "$i" = "${!#}" ] || sleep 60
done
