#!/bin/bash
# Before/after bench of a change, the two sides alternated run by run (A B A B ...).
# Usage, from the repository: bash benchmarks/bench-ab-2026-11-23/bench_ab.sh BASE_COMMIT [ROUNDS] [OUT]
# (OUT defaults to benchmarks/bench-ab)
set -euo pipefail
base_rev=${1:?give the commit to compare with}; rounds=${2:-4}; out=${3:-benchmarks/bench-ab}
here=$(git rev-parse --show-toplevel)
base=$(mktemp -d)/base
git worktree add -q --detach "$base" "$base_rev"
mkdir -p "$out"
for round in $(seq 1 "$rounds"); do
  for side in base main; do
    dir=$base; [ $side = main ] && dir=$here
    # PYTHONPATH: an editable install would otherwise import the checkout it was made from
    (cd "$dir" && PYTHONPATH=$dir python scripts/bench.py --only game_steps_per_s --only uct --only puct \
        --only selfplay > "$here/$out/$side-$round.json")
  done
done
git worktree remove --force "$base"
