#!/bin/bash
# Builds build-var/s34/i for dev_s34.sh PART i: the final f32 libraries
# (new/: build-var/s34/h/new) against session 33's kernels (base/:
# build-var/s34/a/new), for one run of the whole table.
set -euo pipefail
B=build-var/s34/i
rm -rf $B && mkdir -p $B/seqlens
cp bench/cuda/bench_fused.py $B/
cp ../shared/bench/seqlens/*.txt bench/seqlens/*.txt $B/seqlens/
cp -r build-var/s34/h/new $B/new
cp -r build-var/s34/a/new $B/base
du -sh $B
