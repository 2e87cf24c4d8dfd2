#!/bin/sh
# Two builds of ggp side by side (docs/experiments/forced-turns.md, win-in-one.md): NEW and OLD
# (paths of `ggp` binaries) each serve one player (`ggp serve --threads 1`) pinned to a core of
# its own (0 and 1), and NEW's `ggp tournament` plays them on every game of SET (a set file of
# `CLASS SHEET` lines, as bench/breadth/set-a.txt), seats rotating, `builtin:random` in the
# seats left over. Rerun the same command to resume.
#
#   sh bench/head-to-head.sh NEW OLD SET OUT
#
# Environment (optional): START=20 PLAY=2 MATCHES=2, BASE=../shared/games/base.
set -u
NEW=${1:?usage: sh bench/head-to-head.sh NEW OLD SET OUT}
OLD=${2:?usage: sh bench/head-to-head.sh NEW OLD SET OUT}
SET=${3:?usage: sh bench/head-to-head.sh NEW OLD SET OUT}
OUT=${4:?usage: sh bench/head-to-head.sh NEW OLD SET OUT}
BASE=${BASE:-../shared/games/base}
mkdir -p "$OUT"
taskset -c 0 "$NEW" serve --port 9301 --threads 1 --name new >> "$OUT/new.log" 2>&1 &
new_pid=$!
taskset -c 1 "$OLD" serve --port 9302 --threads 1 --name old >> "$OUT/old.log" 2>&1 &
old_pid=$!
trap 'kill "$new_pid" "$old_pid" 2> /dev/null' EXIT INT TERM
sleep 2
games=$(awk -v b="$BASE" '{print b "/" $2 ".kif"}' "$SET")
# shellcheck disable=SC2086
"$NEW" tournament $games --player new=127.0.0.1:9301 --player old=127.0.0.1:9302 \
    --filler random=builtin:random --matches "${MATCHES:-2}" --startclock "${START:-20}" \
    --playclock "${PLAY:-2}" --out "$OUT" >> "$OUT/run.log" 2>&1
# shellcheck disable=SC2086
"$NEW" tournament $games --player new=127.0.0.1:9301 --player old=127.0.0.1:9302 \
    --filler random=builtin:random --matches "${MATCHES:-2}" --out "$OUT" --report 2> /dev/null \
    | sed -n '/matches planned/p; /^all games/,$p'
