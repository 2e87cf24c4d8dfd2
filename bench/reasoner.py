#!/usr/bin/env python3
"""Reasoner benchmarks: grounding over a whole corpus, and playouts per second.

Two reports, both from the release binary (`cargo build --release` first):

    bench/reasoner.py ground [--dir ../shared/games/base] [--seconds 10]
        Runs `ggp ground --max-seconds S` on every sheet, one at a time, and prints one line
        per game (wall time, gates, peak memory, or why it stopped) and the share of games
        that ground within S seconds of wall time, process start included.

    bench/reasoner.py speed [--seconds 5] [--threads 1] [GAME ...]
        Runs `ggp bench --engine propnet` on each game (by default the seven of the propnet
        issue) and prints playouts per second, per CPU second and the target.
"""
import argparse
import os
import re
import subprocess
import sys
import time

TARGETS = {
    "ticTacToe": 400_000,
    "connectFour": 150_000,
    "breakthrough": 25_000,
    "speedChess": 6_000,
    "reversi": 3_000,
    "hex": 3_000,
    "chess_200": 1_000,
}

ap = argparse.ArgumentParser()
ap.add_argument("what", choices=["ground", "speed"])
ap.add_argument("games", nargs="*")
ap.add_argument("--dir", default="../shared/games/base")
ap.add_argument("--seconds", type=float)
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--ggp", default="target/release/ggp")
args = ap.parse_intermixed_args()


def field(text, name):
    m = re.search(rf"^{re.escape(name)}: (\S+)", text, re.M)
    return m.group(1) if m else None


if args.what == "ground":
    limit = args.seconds or 10.0
    names = args.games or sorted(f[:-4] for f in os.listdir(args.dir) if f.endswith(".kif"))
    within = 0
    for name in names:
        path = os.path.join(args.dir, name + ".kif")
        start = time.monotonic()
        try:
            p = subprocess.run(
                [args.ggp, "ground", "--max-seconds", str(limit), path],
                capture_output=True, text=True, timeout=limit * 6 + 30,
            )
            out, code = p.stdout + p.stderr, p.returncode
        except subprocess.TimeoutExpired:
            out, code = "killed: no answer in time", -1
        wall = time.monotonic() - start
        ok = code == 0 and wall <= limit
        within += ok
        if code == 0:
            what = f"{field(out, 'gates')} gates, {field(out, 'peak memory')} MB"
        else:
            lines = [l for l in out.splitlines() if "warning:" not in l and l.strip()]
            what = (lines[-1] if lines else f"exit {code}")[:160]
        print(f"{name:40} {'ok  ' if ok else 'FAIL'} {wall:6.2f} s  {what}", flush=True)
    share = 100.0 * within / max(len(names), 1)
    print(f"{within} of {len(names)} games ground within {limit:g} s ({share:.1f}%)")
else:
    seconds = args.seconds or 5.0
    names = args.games or list(TARGETS)
    for name in names:
        path = os.path.join(args.dir, name + ".kif")
        p = subprocess.run(
            [args.ggp, "bench", path, "--engine", "propnet", "--seconds", str(seconds),
             "--threads", str(args.threads)],
            capture_output=True, text=True,
        )
        if p.returncode != 0:
            print(f"{name:14} failed: {p.stderr.strip()[-200:]}")
            continue
        rate = float(field(p.stdout, "playouts/s"))
        cpu = re.search(r"\(([\d.]+) playouts per cpu second\)", p.stdout)
        target = TARGETS.get(name)
        verdict = "" if target is None else ("meets" if rate >= target else "BELOW") + f" {target:,}"
        cpu_rate = f"{float(cpu.group(1)):12,.0f}/cpu s" if cpu else ""
        print(f"{name:14} {rate:12,.0f}/s {cpu_rate}  {verdict}", flush=True)
    sys.exit(0)
