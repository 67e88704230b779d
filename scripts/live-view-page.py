#!/usr/bin/env python3
"""The live page in headless Chromium, as a person uses it (scripts/live-view runs it).

Drives Debian's chromium through the DevTools protocol on a pipe (--remote-debugging-pipe:
file descriptors 3 and 4, one JSON message per NUL), with Python's standard library only.
Arguments: ORIGIN TOKEN SERVICE_PID OUT_DIR. Checks, each failing with one line:
  - the page opened with ?token= loads, polls and shows the service's handlers with counts
    that grow between two looks;
  - every request it makes goes to ORIGIN (none elsewhere, none blocked by its policy) and no
    script error or dialog happens;
  - a point named with HTML shows as that text (no script of it runs, no element of it exists);
  - a click on a column's header re-sorts by it (twice: the other way), the filter box filters;
  - a click on the flame graph zooms into a frame;
  - a screenshot goes to OUT_DIR/live-page.png;
  - the service killed, the page says so and keeps its table.
"""
import base64
import json
import os
import select
import signal
import subprocess
import sys
import time

# `--first-paint ORIGIN OUT` (the live_targets bench): only the time from navigation to the
# first table drawn, printed as `first-paint-ms N ROWS`.
FIRST_PAINT = sys.argv[1] == "--first-paint"
if FIRST_PAINT:
    ORIGIN, TOKEN, SERVICE_PID, OUT = sys.argv[2], "", 0, sys.argv[3]
else:
    ORIGIN, TOKEN, SERVICE_PID, OUT = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ODD = "<script>document.title='pwned'</script><img src=x onerror=alert(1)> &amp; &lt;b&gt;"


def fail(msg):
    print(f"live-view page: FAILED: {msg}", file=sys.stderr)
    sys.exit(1)


class Browser:
    def __init__(self):
        cmd_r, self.cmd_w = os.pipe()
        self.resp_r, resp_w = os.pipe()

        def fds():
            # Through fresh numbers first: a pipe that is already 3 or 4 would otherwise keep
            # its close-on-exec flag (dup2 onto itself changes nothing).
            a, w = os.dup(cmd_r), os.dup(resp_w)
            os.dup2(a, 3)
            os.dup2(w, 4)

        home = os.path.join(OUT, "home")
        os.makedirs(home, exist_ok=True)
        self.log = open(os.path.join(OUT, "chromium.log"), "w")
        self.proc = subprocess.Popen(
            ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--hide-scrollbars", "--remote-debugging-pipe", "--window-size=1280,1000",
             f"--user-data-dir={home}/profile", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log,
            preexec_fn=fds, close_fds=False, env=dict(os.environ, HOME=home))
        os.close(cmd_r)
        os.close(resp_w)
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.session = None

    def send(self, method, params=None, session=True):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.cmd_w, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        deadline = time.time() + 30
        while True:
            m = self.read(deadline)
            if m is None:
                fail(f"no answer from chromium to {method} within 30 s")
            if m.get("id") == want:
                if "error" in m:
                    fail(f"{method}: {m['error']}")
                return m.get("result", {})

    def read(self, deadline):
        while b"\0" not in self.buf:
            left = deadline - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.resp_r], [], [], left)
            if not r:
                return None
            chunk = os.read(self.resp_r, 1 << 20)
            if not chunk:
                fail("chromium closed its pipe (see chromium.log)")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        m = json.loads(raw)
        if "method" in m:
            self.events.append(m)
        return m

    def pump(self, seconds):
        """Takes in the events of the next `seconds`."""
        deadline = time.time() + seconds
        while time.time() < deadline:
            if self.read(deadline) is None:
                break

    def js(self, expr):
        r = self.send("Runtime.evaluate", {"expression": expr, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            fail(f"evaluating {expr!r}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def until(self, what, expr, seconds=20):
        deadline = time.time() + seconds
        while time.time() < deadline:
            v = self.js(expr)
            if v:
                return v
            self.pump(0.25)
        status = self.js("document.getElementById('status').textContent")
        fail(f"{what}: not within {seconds} s (status: {status!r})")

    def click(self, x, y):
        for t in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left", "clickCount": 1})

    def close(self):
        try:
            self.send("Browser.close", session=False)
        except SystemExit:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


ROWS = """[...document.querySelectorAll('#rows tr')].map(tr => [...tr.children].map(td => td.textContent))"""
HEADS = """[...document.querySelectorAll('#heads th')].map(th => [th.textContent, th.getAttribute('aria-sort') || ''])"""


def num(s):
    return float(s.replace(",", "")) if s not in ("-", "") else -1.0


def main():
    b = Browser()
    try:
        targets = b.send("Target.getTargets", session=False)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        b.session = b.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True}, session=False)["sessionId"]
        for d in ("Page.enable", "Network.enable", "Runtime.enable", "Log.enable"):
            b.send(d)
        if FIRST_PAINT:
            # In the page: polled every 10 ms from the navigation on, the time (the page's own
            # clock, from navigation start) at which the table first had rows.
            b.send("Page.addScriptToEvaluateOnNewDocument", {"source": """
                const t = setInterval(() => { const n = document.querySelectorAll('#rows tr').length;
                  if (n > 0) { window.__firstPaint = [performance.now(), n]; clearInterval(t); } }, 10);"""})
            b.send("Page.navigate", {"url": f"{ORIGIN}/"})
            fp = b.until("the first table", "window.__firstPaint", 60)
            print(f"first-paint-ms {fp[0]:.0f} {fp[1]}")
            return
        t0 = time.time()
        b.send("Page.navigate", {"url": f"{ORIGIN}/?token={TOKEN}"})
        b.until("the table shows the handlers", f"{ROWS}.some(r => r[0] === 'service::handle_hash')")
        print(f"live-view page: first table after {time.time() - t0:.2f} s", file=sys.stderr)
        heads = [h[0] for h in b.js(HEADS)]
        if heads[:4] != ["name", "calls", "calls/s", "total"]:
            fail(f"the columns are {heads}")
        first = {r[0]: r for r in b.js(ROWS)}
        for h in ("service::handle_hash", "service::handle_sort", "service::serve_connection"):
            if h not in first or num(first[h][1]) <= 0:
                fail(f"{h} is not in the table with calls: {first.get(h)}")
        # Live: the counts grow from one poll to the next (the page polls every 2 s).
        b.pump(4.5)
        later = {r[0]: r for r in b.js(ROWS)}
        if num(later["service::handle_hash"][1]) <= num(first["service::handle_hash"][1]):
            fail(f"handle_hash's calls did not grow: {first['service::handle_hash'][1]} then {later['service::handle_hash'][1]}")
        if num(later["service::handle_hash"][2]) <= 0:
            fail(f"handle_hash has no calls/s: {later['service::handle_hash']}")
        print(f"live-view page: handle_hash {first['service::handle_hash'][1]} then {later['service::handle_hash'][1]} calls, "
              f"{later['service::handle_hash'][2]}/s", file=sys.stderr)

        # The point named with HTML: its text, nothing of it run or made.
        b.until("the point named with HTML is in the table", f"{ROWS}.some(r => r[0] === {json.dumps(ODD)})")
        if b.js("document.title") == "pwned" or b.js("document.querySelector('#rows img, #rows script') !== null"):
            fail("the HTML in a point's name was run or made into elements")

        # A click on "calls" sorts by calls, largest first; a second, smallest first.
        def click_head(name):
            box = b.js(f"""(() => {{ const th = [...document.querySelectorAll('#heads th')].find(t => t.textContent === {json.dumps(name)});
                const r = th.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; }})()""")
            b.click(*box)
            b.pump(0.3)
        for order, pick in (("descending", max), ("ascending", min)):
            click_head("calls")
            rows = b.js(ROWS)
            calls = [num(r[1]) for r in rows]
            sort = dict(b.js(HEADS))["calls"]
            if sort != order or calls[0] != pick(calls):
                fail(f"after a click on calls ({order}): aria-sort {sort!r}, calls {calls}")
            if order == "descending" and rows[0][0] != "service::handle_hash":
                fail(f"sorted by calls, the first row is {rows[0][0]}")
        print("live-view page: a click on calls sorts by it, a second click the other way", file=sys.stderr)

        # The filter box: a glob.
        b.js("document.getElementById('filter').focus()")
        b.send("Input.insertText", {"text": "*::handle_s?rt"})
        b.pump(0.3)
        names = [r[0] for r in b.js(ROWS)]
        if names != ["service::handle_sort"]:
            fail(f"the filter *::handle_s?rt left {names}")
        b.js("(() => { const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()")

        # The flame graph: a click on a frame zooms into it.
        box = b.js("""(() => { const r = document.getElementById('flame').getBoundingClientRect();
            return [r.x + 20, r.y + 18 + 9]; })()""")
        b.click(*box)
        b.pump(0.3)
        if b.js("document.getElementById('unzoom').disabled"):
            fail("a click on the flame graph's second row zoomed into nothing")

        shot = b.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        png = os.path.join(OUT, "live-page.png")
        with open(png, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        print(f"live-view page: screenshot {png}", file=sys.stderr)

        # The service goes away: the page says so and keeps its table.
        os.kill(SERVICE_PID, signal.SIGKILL)
        b.until("the page says the server is gone", "document.getElementById('status').className === 'gone'", 30)
        status = b.js("document.getElementById('status').textContent")
        if "not answering" not in status or not b.js(f"{ROWS}.length > 0"):
            fail(f"with the server gone: status {status!r}, {b.js(ROWS + '.length')} rows")
        print(f"live-view page: server gone: {status}", file=sys.stderr)

        # Every request went to the server itself; nothing failed in the page.
        urls = [e["params"]["request"]["url"] for e in b.events if e["method"] == "Network.requestWillBeSent"]
        outside = [u for u in urls if not u.startswith(ORIGIN + "/")]
        if outside or len(urls) < 3:
            fail(f"{len(urls)} requests, outside the process: {outside}")
        fetches = [u for u in urls if "/debug/profpoint?format=json" in u]
        errors = [e for e in b.events if e["method"] in ("Runtime.exceptionThrown", "Page.javascriptDialogOpening")]
        errors += [e for e in b.events if e["method"] == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"
                   and "ERR_CONNECTION_REFUSED" not in e["params"]["entry"].get("text", "")
                   and e["params"]["entry"].get("source") != "network"]
        if errors:
            fail(f"errors in the page: {json.dumps(errors)[:800]}")
        print(f"live-view page: {len(urls)} requests, all to {ORIGIN} ({len(fetches)} of the JSON); no error", file=sys.stderr)
    finally:
        b.close()


main()
