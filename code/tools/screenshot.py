"""Take the README's screenshot of the built site, in Debian's Chromium (as the site test does).

    python code/tools/screenshot.py [SITE] [PAGE] [OUT]

SITE defaults to _build/html, PAGE to the method chapter, OUT to book/images/site-screenshot.png.
The screen shows the page from its first plot (the baselines measured by the book), with the
sidebar, so a reader of the README sees what a chapter looks like.
"""
from __future__ import annotations

import functools
import http.server
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"


def main() -> None:
    site = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "_build" / "html"
    page = sys.argv[2] if len(sys.argv) > 2 else "book/method/measuring"
    out = Path(sys.argv[3]) if len(sys.argv) > 3 else ROOT / "book" / "images" / "site-screenshot.png"
    if not (site / f"{page}.html").exists():
        raise SystemExit(f"error: no {page}.html under {site}: run `make book` first")
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
            tab = browser.new_page(viewport={"width": 1280, "height": 800})
            tab.goto(f"http://127.0.0.1:{httpd.server_address[1]}/{page}.html", wait_until="networkidle")
            figure = tab.locator("div.cell_output img").first
            if figure.count():
                # The plot's heading and text above it, then the plot.
                tab.evaluate("el => window.scrollTo(0, el.getBoundingClientRect().top + window.scrollY - 330)",
                             figure.element_handle())
            tab.screenshot(path=str(out))
            browser.close()
    finally:
        httpd.shutdown()
        httpd.server_close()
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
