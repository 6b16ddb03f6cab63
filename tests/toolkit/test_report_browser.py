"""The HTML report in a real browser: headless Chromium opens the report of the calibration models
(saved TLC output: the fixture project's failing models, a 23-state ladder and the engine's
`inmem_overlap_unguarded`), and the test reads the DOM Chromium built from it.

It checks that every counterexample has its swimlane, with one row per state and the violating
step marked (the last), the lasso drawn as a loop, and that the page fetched nothing from the
network: Chromium runs with a proxy and a resolver that lead nowhere, and its network log must
show no request on the page's behalf (Chromium's own background requests are told apart by their
network isolation key, which for the page's requests is the page's `file://` origin).

Skipped where Chromium is absent; failed so under CI=true (`chromium` fixture, tests/conftest.py).
"""

from __future__ import annotations

import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conformance.report.html import model_sections, models_html, write_report
from toolkit.report_fixtures import CALIBRATIONS, saved_outcome

pytestmark = pytest.mark.browser

# Chromium's own background traffic (updates, sync, translation) kept out of the network log.
QUIET = ["--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions"]
# Every request would go to a proxy on the discard port, for a host that resolves to nothing.
NOWHERE = ["--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND"]


def headless(chromium: str, profile: Path, *args: str) -> list[str]:
    """A headless Chromium command line, with its own profile directory."""
    return [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--user-data-dir={profile}", *QUIET, *NOWHERE, *args]


def dump_dom(chromium: str, page: Path, tmp: Path) -> tuple[str, list[str]]:
    """The DOM Chromium built from `page`, and the URLs it requested on the page's behalf."""
    netlog = tmp / "net.json"
    run = subprocess.run(headless(chromium, tmp / "profile", f"--log-net-log={netlog}", "--dump-dom", page.as_uri()),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr[-2000:]
    return run.stdout, page_requests(json.loads(netlog.read_text()))


def page_requests(netlog: dict) -> list[str]:  # type: ignore[type-arg]
    """The URLs of the requests a network log shows made for a `file://` page (not for Chromium)."""
    types = {v: k for k, v in netlog["constants"]["logEventTypes"].items()}
    urls = []
    for e in netlog["events"]:
        p = e.get("params") or {}
        if types.get(e["type"]) == "URL_REQUEST_START_JOB" and "file://" in str(p.get("network_isolation_key", "")):
            if not str(p.get("url", "")).startswith("file:"):
                urls.append(p["url"])
    return urls


class Dom(HTMLParser):
    """Every element of a page as (tag, attributes, the id of the section it is in)."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str], str | None]] = []
        self._sections: list[tuple[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "section":
            self._sections.append((tag, a.get("id")))
        self.elements.append((tag, a, self._sections[-1][1] if self._sections else None))

    def handle_endtag(self, tag: str) -> None:
        if tag == "section" and self._sections:
            self._sections.pop()

    def within(self, section: str, tag: str, **attrs: str) -> list[dict[str, str]]:
        """The elements `tag` of `section` whose attributes include `attrs` (class: one of its classes)."""
        out = []
        for t, a, s in self.elements:
            if s != section or t != tag:
                continue
            if all((v in a.get("class", "").split()) if k == "class_" else a.get(k) == v for k, v in attrs.items()):
                out.append(a)
        return out


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outcomes = [saved_outcome(name) for name in CALIBRATIONS]
    return write_report(tmp_path_factory.mktemp("report"), models_html(outcomes, model_sections(outcomes)))


def test_every_counterexample_has_its_swimlane_with_the_violation_marked_and_nothing_is_fetched(
        chromium: str, report: Path, tmp_path: Path) -> None:
    dom_text, requests = dump_dom(chromium, report, tmp_path)
    dom = Dom()
    dom.feed(dom_text)
    outcomes = {name: saved_outcome(name) for name in CALIBRATIONS}
    sections = [a["id"] for t, a, _ in dom.elements if t == "section" and "failure" in a.get("class", "").split()]
    assert sections == [f"model-{n}" for n, o in outcomes.items() if o.verdict.counterexample]
    for name, o in outcomes.items():
        cx = o.verdict.counterexample
        assert cx is not None
        sid = f"model-{name}"
        assert len(dom.within(sid, "svg", class_="swimlane")) == 1, f"{name}: no swimlane"
        steps = dom.within(sid, "g", class_="step")
        assert [int(s["data-step"]) for s in steps] == [s.index for s in cx.states], name
        marked = dom.within(sid, "g", **{"data-marked": "true"})
        assert [m["data-step"] for m in marked] == [str(cx.states[-1].index)], f"{name}: the violating step is not marked"
        assert dom.within(sid, "text", class_="note"), f"{name}: the marked step does not say what broke"
    # Only the changes, highlighted: the ladder's 22 climbs change three values each.
    assert len(dom.within("model-ladder", "rect", class_="changed")) == 22 * 3
    assert len(dom.within("model-ladder", "text", class_="change")) == 4 + 22 * 3  # and its first state's four values
    assert dom.within("model-lasso", "g", class_="loop", **{"data-kind": "loop", "data-back-to": "1"})
    assert dom.within("model-temporal", "g", class_="loop", **{"data-kind": "stutter"})
    # The property's definition beside its swimlane, read from the module.
    assert "NoOverlappingRuns ==" in dom_text and "BelowTop == rung &lt; Top" in dom_text
    # Nothing from the network: no such reference in the page, and no request in Chromium's log.
    attrs = [v for _, a, _ in dom.elements for k, v in a.items() if k in ("src", "href", "xlink:href", "action")]
    assert [v for v in attrs if not v.startswith("#")] == []
    assert "url(http" not in dom_text and "@import" not in dom_text
    assert requests == []


def test_the_network_check_sees_a_fetch(chromium: str, tmp_path: Path) -> None:
    """The network log does show a page's request: the check above would see one."""
    page = tmp_path / "fetches.html"
    page.write_text('<!DOCTYPE html><html><body><img src="http://example.invalid/x.png"></body></html>')
    _, requests = dump_dom(chromium, page, tmp_path)
    assert requests == ["http://example.invalid/x.png"]
