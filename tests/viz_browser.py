#!/usr/bin/env python3
"""viz_browser.py: drives headless Chromium over the DevTools protocol
(standard library only: its websocket client is below) through the VIZ page
that `tg viz --serve` serves (test_viz_web.c starts the servers).

    python3 viz_browser.py URL [--bad URL TEXT]... [--screenshot OUT.png]

URL serves a good trace. The script asks the server which kernel has the
most rewrite steps and which of its steps changed the most nodes, then in
the browser clicks that kernel in the list and that step in the step list
(real mouse events at the elements' positions), and checks that
  - the graph SVG has exactly the step's nodes, and as many nodes drawn as
    new as the server's graph has (the highlight),
  - the source panel holds the kernel's source, which defines the kernel,
  - a screenshot of the graph area is not blank: the PNG, decoded here with
    zlib, has more than one colour there and the fill colour of new nodes.
Each --bad URL TEXT serves a broken trace: the page must show its error
panel containing TEXT. --screenshot saves the page with the step shown (the
picture in docs/viz.md). Prints "viz browser: all ok" at the end; exits 1
with the reason otherwise, 77 when Chromium cannot be started."""
import base64
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request
import zlib


def fail(msg):
    print("viz browser: FAIL: " + msg)
    sys.exit(1)


# ---- a minimal websocket client (RFC 6455): text frames, masked, no extensions

class WebSocket:
    def __init__(self, url):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=20)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                fail("the DevTools websocket closed during its handshake")
            head += chunk
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            fail("the DevTools websocket handshake was refused: " + head.split(b"\r\n", 1)[0].decode(errors="replace"))
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def send(self, text):
        data = text.encode()
        n = len(data)
        hdr = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536
                               else bytes([0x80 | 127]) + struct.pack(">Q", n))
        mask = os.urandom(4)
        self.sock.sendall(hdr + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                fail("the DevTools websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 8:
                fail("the DevTools websocket was closed by the browser")
            if op in (9, 10):   # ping/pong: not sent by Chromium's DevTools server; skipped
                continue
            parts.append(payload)
            if b0 & 0x80:
                return b"".join(parts).decode()


class DevTools:
    def __init__(self, ws_url):
        self.ws = WebSocket(ws_url)
        self.next_id = 0

    def call(self, method, **params):
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    fail(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def js(self, expr):
        r = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            fail(f"the page's script failed on {expr!r}: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def wait(self, expr, what, timeout=10):
        t0 = time.time()
        while time.time() - t0 < timeout:
            v = self.js(f"(() => {{ try {{ return {expr}; }} catch (e) {{ return null; }} }})()")   # null while a page loads
            if v:
                return v
            time.sleep(0.05)
        fail(f"timed out waiting for {what} ({expr})")

    def click(self, selector):
        """A real mouse click at the middle of the element."""
        r = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null; e.scrollIntoView({{block: 'center'}});"
                    f" const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()")
        if not r:
            fail("no element " + selector + " to click")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=r[0], y=r[1], button="left", clickCount=1)


# ---- PNG: decoded with zlib (8-bit RGB or RGBA, as Chromium writes them)

def png_pixels(data):
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail("the screenshot is not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                fail(f"unexpected PNG format (depth {depth}, colour type {ctype})")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = line
    return rows


def get_json(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.load(r)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        sys.exit(2)
    url, bad, shot = args[0].rstrip("/"), [], None
    i = 1
    while i < len(args):
        if args[i] == "--bad":
            bad.append((args[i + 1].rstrip("/"), args[i + 2]))
            i += 3
        elif args[i] == "--screenshot":
            shot = args[i + 1]
            i += 2
        else:
            fail("unknown argument " + args[i])

    # what the server says: the kernel with the most steps, its step that changed the most
    trace = get_json(url + "/api/trace")
    best = None
    for k in trace["kernels"]:
        kj = get_json(f"{url}/api/kernel?id={k['id']}")
        for pi, p in enumerate(kj["passes"]):
            for si, s in enumerate(p["steps"]):
                g = s.get("graph") or {}
                new = sum(1 for n in g.get("nodes", []) if n.get("side") == 2)
                score = (new, len(g.get("nodes", [])), sum(len(q["steps"]) for q in kj["passes"]))
                if best is None or score > best[0]:
                    best = (score, kj, pi, si)
    if not best:
        fail("the trace has no kernel with a rewrite step")
    _, kern, pi, si = best
    step = kern["passes"][pi]["steps"][si]
    nodes = step["graph"]["nodes"]
    n_new = sum(1 for n in nodes if n["side"] == 2)

    exe = next((shutil.which(c) for c in ("chromium", "chromium-browser", "google-chrome") if shutil.which(c)), None)
    if not exe:
        print("viz browser: skip: no chromium")
        sys.exit(77)
    prof = tempfile.mkdtemp(prefix="tg_viz_chromium_")
    proc = subprocess.Popen([exe, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
                             "--hide-scrollbars", "--remote-debugging-port=0", "--user-data-dir=" + prof, "--window-size=1400,860",
                             "about:blank"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        ws_url, t0 = None, time.time()
        while not ws_url and time.time() - t0 < 15:
            line = proc.stderr.readline()
            if not line and proc.poll() is not None:
                break
            m = re.search(r"DevTools listening on (ws://\S+)", line)
            if m:
                ws_url = m.group(1)
        if not ws_url:
            print("viz browser: skip: chromium did not start its DevTools server")
            sys.exit(77)
        port = re.match(r"ws://[^:]+:(\d+)/", ws_url).group(1)
        pages = [t for t in get_json(f"http://127.0.0.1:{port}/json/list") if t["type"] == "page"]
        dt = DevTools(pages[0]["webSocketDebuggerUrl"])
        dt.call("Page.enable")
        dt.call("Runtime.enable")

        # the good trace: click the kernel, then the step
        dt.call("Page.navigate", url=url + "/")
        dt.wait("document.querySelectorAll('#schedules .item.kernel').length > 0", "the kernel list")
        dt.click(f"#schedules .item.kernel[data-id='{kern['id']}']")
        dt.wait(f"document.querySelector('#kernel-head b') && document.querySelector('#kernel-head b').textContent === {json.dumps(kern['name'])}",
                "the kernel's header")
        key = f"{pi}.{si}"
        dt.wait(f"!!document.querySelector(\"#steps .step[data-step='{key}']\")", "the step list")
        dt.click(f"#steps .step[data-step='{key}']")
        dt.wait(f"document.querySelector('#steps .step.sel') && document.querySelector('#steps .step.sel').dataset.step === '{key}'",
                "the step to be selected")
        drawn = dt.wait("document.querySelectorAll('#graph g.node').length", "graph nodes")
        if drawn != len(nodes):
            fail(f"the graph shows {drawn} nodes, the step has {len(nodes)}")
        drawn_new = dt.js("document.querySelectorAll('#graph g.node.side2').length")
        if drawn_new != n_new:
            fail(f"{drawn_new} nodes are highlighted as new, the step has {n_new}")
        if dt.js("document.querySelectorAll('#graph path.edge').length") != len(step["graph"]["edges"]):
            fail("the graph's edges are not the step's")
        src = dt.js("document.getElementById('source').textContent")
        if src != kern["src"] or kern["name"] + "(" not in src:
            fail("the source panel does not hold the kernel's source")
        head = dt.js("document.getElementById('step-head').textContent")
        if step["rule"] not in head:
            fail(f"the step header does not name the rule {step['rule']!r}: {head!r}")
        if not dt.js("document.getElementById('error').hidden"):
            fail("the error panel is shown for a good trace: " + dt.js("document.getElementById('error').textContent"))

        # the screenshot: the graph area is not blank, and new nodes are drawn in their colour
        rect = dt.js("(() => { const r = document.getElementById('graph-scroll').getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })()")
        png = base64.b64decode(dt.call("Page.captureScreenshot", format="png")["data"])
        if shot:
            with open(shot, "wb") as f:
                f.write(png)
        px = png_pixels(png)
        x0, y0, x1, y1 = int(rect[0]) + 1, int(rect[1]) + 1, int(rect[0] + rect[2]) - 1, int(rect[1] + rect[3]) - 1
        colours = {}
        for y in range(y0, min(y1, len(px))):
            for c in px[y][x0:x1]:
                colours[c] = colours.get(c, 0) + 1
        if len(colours) < 2:
            fail(f"the graph area of the screenshot is one colour {list(colours)}: blank")
        green = (0xc9, 0xf2, 0xc9)   # viz.css: .side2 rect
        if n_new and colours.get(green, 0) < 50:
            fail(f"no new node drawn in the screenshot (colour {green}: {colours.get(green, 0)} pixels)")

        # the profile tab draws a timeline with the kernels' spans
        dt.click("#tab-profile")
        spans = dt.wait("document.querySelectorAll('#timeline g.span').length", "the profile timeline")
        if spans < 1 or not dt.js("!!document.querySelector('#timeline .memline')"):
            fail("the profile has no spans or no memory line")

        # broken traces: the error panel
        for burl, text in bad:
            dt.call("Page.navigate", url=burl + "/")
            msg = dt.wait("!document.getElementById('error').hidden && document.getElementById('error').textContent", "the error panel")
            if text not in msg:
                fail(f"the error panel for {burl} says {msg!r}, not {text!r}")
        print(f"viz browser: kernel {kern['name']}, step {key} [{step['rule']}]: {drawn} nodes ({n_new} new), "
              f"{len(colours)} colours in the graph area, {spans} profile spans, {len(bad)} error panels")
        print("viz browser: all ok")
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(prof, ignore_errors=True)


if __name__ == "__main__":
    main()
