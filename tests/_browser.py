"""Drive headless Chromium through its DevTools protocol, with only the standard library.

A test helper, not part of mlcbook: :class:`Browser` starts ``chromium`` on a fresh profile,
connects to its page over a WebSocket (RFC 6455, client side, text frames only) and offers
``visit(url)``, which loads a page and returns the console errors, failed loads and the DOM's
links, ids and images as the browser saw them.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", "--window-size=1280,900"]

# what the page reports about itself once loaded: every link and source, every id, each
# image's decoded width (0 for an image the browser could not decode), the visible text, and
# the size each MathML formula was laid out at (0 wide: the browser did not render it)
_PROBE = """JSON.stringify({
  links: [...document.querySelectorAll('[href],[src]')].map(e => [e.tagName,
          e.getAttribute('href') !== null ? e.getAttribute('href') : e.getAttribute('src'),
          e.href || e.src]),
  ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  images: [...document.images].map(e => [e.getAttribute('src').slice(0, 40), e.complete,
           e.naturalWidth]),
  title: document.title,
  text: document.body ? document.body.innerText : '',
  math: [...document.querySelectorAll('math')].map(e => [e.getAttribute('display') || 'inline',
         e.getBoundingClientRect().width, e.getBoundingClientRect().height])})"""


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _WebSocket:
    def __init__(self, url: str):
        rest = url.split("://", 1)[1]
        hostport, path = rest.split("/", 1)
        host, port = hostport.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {hostport}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        reply = b""
        while b"\r\n\r\n" not in reply:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("DevTools closed the connection during the handshake")
            reply += chunk
        head, self.buffer = reply.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"DevTools refused the WebSocket: {head[:200]!r}")

    def send(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                  bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("DevTools closed the connection")
            self.buffer += chunk
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def recv(self) -> str:
        message = b""
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            if b0 & 0x0F == 0x8:
                raise ConnectionError("DevTools closed the WebSocket")
            if b0 & 0x0F in (0x9, 0xA):  # ping/pong: not part of a message
                continue
            message += payload
            if b0 & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, binary: str, profile: Path):
        self.proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}",
                                      "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.1)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as fh:
            pages = [t for t in json.load(fh) if t["type"] == "page"]
        self.ws = _WebSocket(pages[0]["webSocketDebuggerUrl"])
        self.next_id = 0
        self.events: list[dict] = []
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable")

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg["result"]
            self.events.append(msg)

    def _wait_for(self, method: str, timeout: float = 60) -> None:
        self.ws.sock.settimeout(timeout)
        while not any(e.get("method") == method for e in self.events):
            self.events.append(json.loads(self.ws.recv()))

    def visit(self, url: str) -> dict:
        """Load ``url``; return its probe (links, ids, images) and the errors it raised."""
        self.events.clear()
        self.call("Page.navigate", url=url)
        self._wait_for("Page.loadEventFired")
        probe = json.loads(self.call("Runtime.evaluate", expression=_PROBE,
                                     returnByValue=True)["result"]["value"])
        errors = []
        for e in self.events:
            m, p = e.get("method"), e.get("params", {})
            if m == "Runtime.exceptionThrown":
                errors.append(f"exception: {p['exceptionDetails'].get('text')}")
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(f"console.{p['type']}: {p.get('args')}")
            elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
                errors.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}")
            elif m == "Network.loadingFailed":
                errors.append(f"load failed: {p.get('errorText')}")
        probe["errors"] = errors
        return probe

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.ws.close()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
