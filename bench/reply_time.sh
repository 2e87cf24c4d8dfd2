#!/bin/sh
# Issue 15: the computer's reply at `medium` in the terminal (`ggp play`, from typing the move
# to the next prompt) and on the page (`ggp web` in headless Chromium, from the click to the
# page showing the reply), taken in turns on one binary, the same seed on both sides. Needs node, Chromium and the
# playwright-core that `cargo test --test web` installs under target/tmp/browser-deps.
# Usage: bench/reply_time.sh [ROUNDS]   (default 3; builds the release binary, or times
# GGP_BIN; the server listens on PORT, default 9487)
set -e
cd "$(dirname "$0")/.."
[ -n "$GGP_BIN" ] || cargo build --release -q
bin=${GGP_BIN:-target/release/ggp}
export NODE_PATH="$PWD/target/tmp/browser-deps/node_modules"
port=${PORT:-9487}
$bin web --port $port --seed 1 > /dev/null 2>&1 &
server=$!
trap 'kill $server; wait $server 2>/dev/null' EXIT
# Until the server answers (it may take a while to start on a loaded machine).
for _ in $(seq 1 60); do
  curl -sf "http://127.0.0.1:$port/api/games" > /dev/null && break
  sleep 0.5
done
rounds="${1:-3}"
# Taken in turns, a few runs each, so that the machine's load falls on both alike.
for round in $(seq 1 "$rounds"); do
  python3 bench/reply_time/terminal.py $bin 1 3 connectFour red d
  node bench/reply_time/browser.cjs "http://127.0.0.1:$port/" 3 connectFour d1
  python3 bench/reply_time/terminal.py $bin 1 2 chess white e4
  node bench/reply_time/browser.cjs "http://127.0.0.1:$port/" 2 chess e2,e4
done
