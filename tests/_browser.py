"""Headless Chromium for the dashboard: the browser test and `tools/history_bench.py demo`'s screenshot."""

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# Debian's chromium headless, offline, as root (docs/history.md "The browser test")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
)


def page_timings(
    chromium: str, page: str, profile: str, timeout_s: float = 60.0
) -> dict[str, float]:
    """Real-time milestones of one page load in headless Chromium, driven over its DevTools pipe
    (`--remote-debugging-pipe`; stdlib only): first contentful paint, the first chart drawn (the
    overview heatmap's SVG exists), every chart drawn (<body data-drawn>), in seconds from
    navigation. `--virtual-time-budget` runs cannot tell these: their clock is virtual."""
    import json
    import os
    import subprocess
    import time
    from pathlib import Path

    to_child, from_us = os.pipe()  # Chromium reads commands on fd 3 ...
    to_us, from_child = os.pipe()  # ... and answers on fd 4

    def fds() -> None:
        os.dup2(to_child, 3)
        os.dup2(from_child, 4)
        os.set_inheritable(3, True)  # dup2 onto itself keeps Python's close-on-exec
        os.set_inheritable(4, True)

    proc = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--window-size=1280,1000",
         "--remote-debugging-pipe", "about:blank"],
        preexec_fn=fds, close_fds=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    os.close(to_child)
    os.close(from_child)
    out, inp = os.fdopen(from_us, "wb", buffering=0), os.fdopen(to_us, "rb", buffering=0)
    pending = [b""]
    ids = iter(range(1, 1 << 30))

    def call(method: str, params: dict | None = None, session: str | None = None) -> dict:  # type: ignore[type-arg]
        mid = next(ids)
        msg = {"id": mid, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        out.write(json.dumps(msg).encode() + b"\0")
        while True:
            while b"\0" in pending[0]:
                raw, pending[0] = pending[0].split(b"\0", 1)
                answer = json.loads(raw)
                if answer.get("id") == mid:
                    return answer.get("result", {})
            chunk = inp.read(1 << 16)
            if not chunk:
                raise RuntimeError(f"{chromium} closed its DevTools pipe")
            pending[0] += chunk

    probe = (
        "JSON.stringify([(performance.getEntriesByName('first-contentful-paint')[0] || {})"
        ".startTime ?? null, !!document.querySelector('#overview svg'), "
        "document.body ? document.body.dataset.drawn || null : null, "
        "document.body ? document.body.dataset.errors || null : null])"
    )
    try:
        target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        t0 = time.perf_counter()
        call("Page.navigate", {"url": Path(page).resolve().as_uri()}, session)
        first_chart = None
        while time.perf_counter() - t0 < timeout_s:
            value = call("Runtime.evaluate", {"expression": probe, "returnByValue": True}, session)
            fcp, chart, drawn, errors = json.loads(value["result"]["value"])
            now = time.perf_counter() - t0
            if errors:
                raise RuntimeError(f"{page}: {errors} script error(s)")
            if chart and first_chart is None:
                first_chart = now
            if drawn:
                return {"fcp_s": fcp / 1000, "first_chart_s": first_chart or now, "drawn_s": now}
            time.sleep(0.01)
        raise RuntimeError(f"{page}: not drawn within {timeout_s:g} s")
    finally:
        proc.kill()
        proc.wait()
