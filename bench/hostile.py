#!/usr/bin/env python3
"""A player under siege: 1,000 hostile connections, then INFO latency and a whole match.

Starts `ggp serve` under `ulimit -n 1024`, opens 1,000 hostile connections (idle; dribbling
one byte a second; announcing a huge Content-Length and stalling; garbage bytes then holding;
in equal parts) while 20 threads send INFO concurrently, then measures INFO latency with the
siege still in place and plays a whole match against it with `ggp match` (the siege goes on).
Usage:

    bench/hostile.py [--ggp target/release/ggp] [--port 9400] [--game rules/ticTacToe.kif]

Prints the latencies, the match result and whether the player is still up; exits 1 if any
check fails (INFO over 100 ms, the match not finished, the player dead).
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument("--ggp", default="target/release/ggp")
ap.add_argument("--port", type=int, default=9400)
ap.add_argument("--game", default="rules/ticTacToe.kif")
ap.add_argument("--connections", type=int, default=1000)
args = ap.parse_args()

# Room for our own 1,000 sockets in this process.
import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))

player = subprocess.Popen(
    ["sh", "-c", f'ulimit -n 1024 && exec "$0" serve --port {args.port} --bind 127.0.0.1 --player mcts --threads 1',
     args.ggp],
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
print(player.stdout.readline().strip())
addr = ("127.0.0.1", args.port)


def request(message):
    body = message.encode()
    return (f"POST / HTTP/1.0\r\nContent-Type: text/acl\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode() + body


def info():
    """INFO's reply and its latency in ms, or None."""
    t = time.perf_counter()
    try:
        with socket.create_connection(addr, timeout=5) as s:
            s.sendall(request("(INFO)"))
            reply = b""
            while chunk := s.recv(4096):
                reply += chunk
    except OSError as e:
        return f"error {e}", None
    ms = (time.perf_counter() - t) * 1000
    return reply.split(b"\r\n\r\n", 1)[-1].decode(errors="replace"), ms


stop = threading.Event()
held = []
kinds = {"idle": 0, "dribbling": 0, "huge": 0, "garbage": 0, "refused": 0}
for i in range(args.connections):
    try:
        s = socket.create_connection(addr, timeout=5)
        kind = ["idle", "dribbling", "huge", "garbage"][i % 4]
        if kind == "huge":
            s.sendall(b"POST / HTTP/1.0\r\nContent-Length: 99999999999\r\n\r\n(INFO")
        elif kind == "garbage":
            s.sendall(os.urandom(200) + b"\r\n\r\n")
        elif kind == "dribbling":
            s.sendall(b"P")
        held.append((kind, s))
        kinds[kind] += 1
    except OSError:
        kinds["refused"] += 1
print("hostile connections opened:", kinds)


def dribble():
    while not stop.is_set():
        for kind, s in held:
            if kind == "dribbling":
                try:
                    s.sendall(b"O")
                except OSError:
                    pass
        time.sleep(1)


concurrent = []


def hammer():
    while not stop.is_set():
        concurrent.append(info()[1])


threads = [threading.Thread(target=dribble, daemon=True)]
threads += [threading.Thread(target=hammer, daemon=True) for _ in range(20)]
for t in threads:
    t.start()
time.sleep(2)
ok = True
latencies = []
for _ in range(20):
    reply, ms = info()
    latencies.append(ms)
    if ms is None or "status" not in reply:
        print("INFO failed:", reply)
        ok = False
    time.sleep(0.05)
good = [m for m in latencies if m is not None]
print(f"INFO under siege: {len(good)}/20 answered, median {sorted(good)[len(good)//2]:.1f} ms, "
      f"max {max(good):.1f} ms" if good else "INFO under siege: none answered")
if not good or max(good) > 100:
    ok = False
answered = [m for m in concurrent if m is not None]
print(f"concurrent INFOs: {len(answered)}/{len(concurrent)} answered")

with tempfile.TemporaryDirectory() as out:
    match = subprocess.run(
        [args.ggp, "match", args.game, "--player", f"x=127.0.0.1:{args.port}",
         "--player", "o=builtin:random", "--startclock", "5", "--playclock", "2",
         "--out", out],
        capture_output=True, text=True)
    print("match:", match.stdout.strip().splitlines()[-3:] if match.stdout else match.stderr[-500:])
    if match.returncode != 0:
        ok = False
stop.set()
alive = player.poll() is None
print("player still running:", alive)
reply, ms = info()
print("INFO after the siege:", reply, f"{ms:.1f} ms" if ms else "")
ok = ok and alive and ms is not None
for _, s in held:
    s.close()
player.terminate()
player.wait()
print("PASS" if ok else "FAIL")
sys.exit(0 if ok else 1)
