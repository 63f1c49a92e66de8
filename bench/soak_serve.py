#!/usr/bin/env python3
"""soak_serve.py: resident memory of `tg serve` over many requests
(docs/security.md, "Leaks").

Starts `tg serve` on stories260K (from ../shared/testdata/models, or
$TG_TESTDATA/models), sends SOAK_REQUESTS (default 10000) requests over a
few keep-alive connections (completions and chat completions of 1 to 4
tokens, some streamed, some malformed so the error paths run too), reads the
server's VmRSS after the warm-up (10% of the requests) and at the end, and
prints

  bench soak_serve requests=N rss_warm_kb=A rss_end_kb=B growth_pct=G ratio=A/B

ratio >= 0.95 is flat memory (growth within 5%); below it, or when a good
request fails, a "bench FAIL" line and exit status 1.

Run from the repository root: python3 bench/soak_serve.py [path/to/tg]
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import time


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main():
    tg = sys.argv[1] if len(sys.argv) > 1 else "build/tg"
    data = os.environ.get("TG_TESTDATA", "../shared/testdata")
    model = os.path.join(data, "models", "stories260K.gguf")
    if not os.path.exists(model):
        print("bench soak_serve skipped reason=no_%s" % model.replace(" ", "_"))
        return 0
    if not os.access(tg, os.X_OK):
        print("bench soak_serve skipped reason=no_tg_binary_at_%s" % tg)
        return 0
    n = int(os.environ.get("SOAK_REQUESTS", "10000"))
    port = free_port()
    srv = subprocess.Popen([tg, "serve", "-m", model, "--port", str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if srv.poll() is not None:
                print("bench FAIL soak_serve: tg serve exited (status %d)" % srv.returncode)
                return 1
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    c.close()
                    break
            except OSError:
                time.sleep(0.1)
        else:
            print("bench FAIL soak_serve: the server did not come up")
            return 1
        conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=30) for _ in range(4)]
        bodies = [
            ("/v1/completions", {"prompt": "Once upon a time", "max_tokens": 2, "temperature": 0}, 200),
            ("/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3}, 200),
            ("/v1/completions", {"prompt": "The cat", "max_tokens": 4, "stream": True}, 200),
            ("/v1/completions", {"prompt": 5}, 400),
            ("/v1/chat/completions", {"messages": "nope"}, 400),
        ]
        warm = 0
        for i in range(n):
            path, body, want = bodies[i % len(bodies)]
            c = conns[i % len(conns)]
            try:
                c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                status = r.status
            except (OSError, http.client.HTTPException):
                c.close()
                conns[i % len(conns)] = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                status = -1
            if status != want:
                print(f"bench FAIL soak_serve: request {i} to {path} gave {status}, not {want}")
                return 1
            if i == n // 10:
                warm = rss_kb(srv.pid)
        end = rss_kb(srv.pid)
        ratio = warm / end if end > 0 else 0
        print("bench soak_serve requests=%d rss_warm_kb=%d rss_end_kb=%d growth_pct=%.2f ratio=%.3f"
              % (n, warm, end, 100.0 * (end - warm) / warm, ratio))
        if ratio < 0.95:
            print("bench FAIL soak_serve: resident memory grew by more than 5% after the warm-up")
            return 1
        return 0
    finally:
        srv.terminate()
        try:
            srv.wait(timeout=10)
        except subprocess.TimeoutExpired:
            srv.kill()


if __name__ == "__main__":
    sys.exit(main())
