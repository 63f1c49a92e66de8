"""serve_load_client.py PORT PID CLIENTS SECONDS [asan]: a load with faults against
`tg serve --parallel N` on stories260K (started by tests/test_serve_model.c;
by hand, for the full run: `tg serve -m stories260K.gguf --max-conns-per-ip
256` (every client here has one address) and `python3
tests/serve_load_client.py PORT PID 64 60`). CLIENTS threads for SECONDS each loop over: a greedy completion whose
text must be what its prompt gives alone (no answer mixed up between
clients), a stream read whole, a stream dropped after its first event (a
client that leaves), a malformed or invalid request (must be a 400), a chat.
Afterwards no slot is busy and nothing waits, and the server's resident
memory grew by at most 20% from the warm-up. Standard library only. Prints
"load client: all ok" or fails."""
import json
import random
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

PORT, PID, CLIENTS, SECONDS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
# under ASan the server's RSS holds the allocator's quarantine: its leak
# check at exit stands in for the memory check
ASAN = sys.argv[5:] == ["asan"]
BASE = f"http://127.0.0.1:{PORT}"
WORDS = ["there", "a", "the", "Tom", "in", "Lily", "one", "she"]


def rss_kb():
    with open(f"/proc/{PID}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def post(path, body, timeout=120):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def get(path):
    with urllib.request.urlopen(BASE + path, timeout=30) as r:
        return json.loads(r.read())


def completion(word, n):
    return post("/v1/completions", {"prompt": f"Once upon a time {word}", "max_tokens": n, "temperature": 0})["choices"][0]["text"]


def stream_whole(word, n):
    body = json.dumps({"prompt": f"Once upon a time {word}", "max_tokens": n, "temperature": 0, "stream": True}).encode()
    req = urllib.request.Request(BASE + "/v1/completions", body, {"Content-Type": "application/json"})
    text = ""
    with urllib.request.urlopen(req, timeout=120) as r:
        for line in r:
            line = line.decode().strip()
            if line.startswith("data: {"):
                c = json.loads(line[6:])
                if c.get("choices"):
                    text += c["choices"][0]["text"]
    return text


def stream_and_leave():
    s = socket.create_connection(("127.0.0.1", PORT), timeout=60)
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 100, "temperature": 0.8, "stream": True}).encode()
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
              % len(body) + body)
    got = b""
    while b"data:" not in got:
        piece = s.recv(4096)
        if not piece:
            break
        got += piece
    s.close()


BAD = [b"{not json", b'{"prompt": 5}', b'{"prompt": "x", "max_tokens": -3}', b'{"prompt": "x", "temperature": "hot"}',
       b'{"prompt": "x", "stop": [1, 2]}', b"[]"]


def bad_request(rng):
    try:
        post("/v1/completions", rng.choice(BAD))
    except urllib.error.HTTPError as e:
        assert e.code == 400, e.code
        return
    raise AssertionError("a bad request was accepted")


# what each prompt gives alone (greedy), the reference for every client
N = 10
alone = {w: completion(w, N) for w in WORDS}
assert len(set(alone.values())) > 1, alone
warm_rss = None
errors, counts = [], {}
lock = threading.Lock()


def client(seed):
    rng = random.Random(seed)
    deadline = time.time() + SECONDS
    while time.time() < deadline:
        what = rng.choice(["completion", "completion", "stream", "leave", "bad", "chat"])
        w = rng.choice(WORDS)
        try:
            if what == "completion":
                got = completion(w, N)
                assert got == alone[w], (w, got, alone[w])
            elif what == "stream":
                got = stream_whole(w, N)
                assert got == alone[w], (w, got, alone[w])
            elif what == "leave":
                stream_and_leave()
            elif what == "bad":
                bad_request(rng)
            else:
                r = post("/v1/chat/completions", {"messages": [{"role": "user", "content": w}], "max_tokens": 4, "temperature": 0.7})
                assert r["choices"][0]["finish_reason"] in ("stop", "length"), r
        except Exception as e:  # noqa: BLE001 - collected
            with lock:
                errors.append(f"{what} {w}: {e!r}")
            return
        with lock:
            counts[what] = counts.get(what, 0) + 1


# a warm-up with the same load, then the measured run
for phase in ("warm", "run"):
    ts = [threading.Thread(target=client, args=(hash((phase, i)) & 0xffff,)) for i in range(CLIENTS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[:5]
    if phase == "warm":
        time.sleep(0.3)
        warm_rss = rss_kb()
deadline = time.time() + 10
while time.time() < deadline and (get("/health")["slots_processing"] or get("/health")["requests_deferred"]):
    time.sleep(0.05)
h = get("/health")
assert h["slots_processing"] == 0 and h["requests_deferred"] == 0, h
end_rss = rss_kb()
assert ASAN or end_rss <= warm_rss * 1.2, (warm_rss, end_rss)
print("load client: all ok", counts, "rss_kb", warm_rss, end_rss)
