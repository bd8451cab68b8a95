"""``annotate serve`` with N headless browsers voting at once (issue 17 item 2).

Starts ``annotate serve`` on a demo database, issues N links, opens each in its own
headless Chromium context (Playwright with the distribution's chromium), and lets every
browser vote V times in the difficulty demo, each at its own pace: press a key 0.3 s
after its screen shows the new progress, again if no vote arrived within 5 s (a key
pressed before the item's paint is confirmed is dropped by the app). Prints the time to the
first item, votes per second over the voting phase, the median and slowest key-to-stored
vote (from the key that was accepted; ``retried`` counts keys pressed again because the
first was dropped), and checks that nothing is lost or duplicated: every vote a screen acknowledged
is a row, no vote id repeats, no annotator has two current votes on one item.

The latencies include the browser, the websocket relay, the app process and the
database, on one machine whose 2 cores also run the N browsers: they are an upper bound
for a server with remote browsers.

Run:  .venv/bin/python benchmarks/bench_serve.py [--browsers 10] [--votes 20]
"""

from __future__ import annotations

import argparse
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.annotate.browser

from playwright.sync_api import sync_playwright

from tests.annotate.browser import (
    Annotator,
    current_votes,
    free_port,
    issue_link,
    launch,
    progress,
    run_annotate,
    served,
)

STUDY = "demo-difficulty"
TOTAL = 40
KEYS = "120"
RETRY_S = 5.0
READ_S = 0.3
"""After the screen shows the next item, wait this long before the key (the app drops keys
pressed before the item's paint is confirmed; a person reads far longer)."""


def run(browsers: int, votes: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        run_annotate("import", "--db", str(db), "--demo")
        port = free_port()
        links = [issue_link(db, f"b{i}", port, study=STUDY) for i in range(browsers)]
        with served(db, port, study=STUDY), sync_playwright() as p:
            browser = launch(p)
            people = [Annotator(browser, f"b{i}", link) for i, link in enumerate(links)]
            t0 = time.monotonic()
            for a in people:
                a.open()
            for a in people:
                a.start(TOTAL)
            ready_s = time.monotonic() - t0
            latencies: list[float] = []
            done = dict.fromkeys((a.name for a in people), 0)
            pressed: dict[str, float] = {}
            first: dict[str, float] = {}
            waiting_paint: set[str] = set()
            ready_at: dict[str, float] = {}
            retried = 0
            began = time.monotonic()
            for a in people:
                a.press(KEYS[0])
                pressed[a.name] = first[a.name] = time.monotonic()
            while any(n < votes for n in done.values()):
                if time.monotonic() - began > 60 * 30:
                    raise SystemExit("gave up after 30 minutes")
                for a in people:
                    n = done[a.name]
                    if n >= votes:
                        continue
                    if a.name in waiting_paint:
                        if a.name not in ready_at and a.seen(progress(n, TOTAL)):
                            a.wait_for(progress(n, TOTAL), timeout=1)
                            ready_at[a.name] = time.monotonic() + READ_S
                        if time.monotonic() >= ready_at.get(a.name, float("inf")):
                            waiting_paint.discard(a.name)
                            del ready_at[a.name]
                            a.press(KEYS[n % len(KEYS)])
                            pressed[a.name] = first[a.name] = time.monotonic()
                        continue
                    stored = current_votes(db, a.name, STUDY)
                    if stored > n:
                        latencies.append(time.monotonic() - pressed[a.name])
                        retried += pressed[a.name] != first[a.name]
                        done[a.name] = stored
                        if stored < votes:
                            waiting_paint.add(a.name)
                    elif time.monotonic() - pressed[a.name] > RETRY_S:  # dropped: unpainted
                        a.press(KEYS[n % len(KEYS)])
                        pressed[a.name] = time.monotonic()
                people[0].page.wait_for_timeout(20)
            wall = time.monotonic() - began
            shown = {}
            for a in people:
                a.wait_for(progress(done[a.name], TOTAL))
                counts = re.findall(r"(?<!\d)(\d+) / 40(?!\d)(?! done)", a.screen.text())
                shown[a.name] = int(counts[-1])
            browser.close()
        with sqlite3.connect(db) as c:
            dup = c.execute("SELECT count(*) - count(DISTINCT uuid) FROM vote").fetchone()[0]
            per_item = c.execute(
                "SELECT max(n) FROM (SELECT count(*) AS n FROM current_vote "
                "GROUP BY annotator_id, item_id)"
            ).fetchone()[0]
            stored = dict(
                c.execute(
                    "SELECT a.name, count(*) FROM current_vote v JOIN annotator a "
                    "ON a.id = v.annotator_id GROUP BY a.name"
                ).fetchall()
            )
    lost = sum(max(0, shown[k] - stored.get(k, 0)) for k in shown)
    total = sum(stored.values())
    print(f"load average before: {LOAD[0]:.2f} {LOAD[1]:.2f} {LOAD[2]:.2f}")
    print(f"load average after:  {os.getloadavg()[0]:.2f}")
    print(
        f"{'browsers':>8} {'votes':>6} {'to 1st item s':>13} {'votes/s':>8} {'median s':>9} "
        f"{'p99 s':>6} {'slowest s':>9} {'retried':>7} {'lost':>5} {'dup':>4}"
    )
    p99 = sorted(latencies)[max(0, int(len(latencies) * 0.99) - 1)]
    print(
        f"{browsers:>8} {total:>6} {ready_s:>13.1f} {total / wall:>8.2f} "
        f"{statistics.median(latencies):>9.2f} {p99:>6.2f} {max(latencies):>9.2f} "
        f"{retried:>7} {lost:>5} {dup + (per_item - 1):>4}"
    )
    ok = lost == 0 and dup == 0 and per_item == 1 and stored == shown
    print("nothing lost or duplicated" if ok else f"MISMATCH: shown {shown} stored {stored}")
    return 0 if ok else 1


LOAD = os.getloadavg()

if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--browsers", type=int, default=10)
    ap.add_argument("--votes", type=int, default=20, help="votes per browser (at most 40)")
    args = ap.parse_args()
    sys.exit(run(args.browsers, min(args.votes, TOTAL)))
