"""No dead link on any page a report writes: a crawler in headless Chromium opens the dashboard
(every view, and every point's catalog and raw JSON links), agentic.html and catalog.html,
follows each link to its file and, for a #fragment, to an element of that id on the target page.

A capacity-only run's pages carry the simulated badge and banner (checked in the browser too).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import unquote, urlparse

from imx_support.headless import open_page
from imx_support.synthetic import SynthJob, write_job
from test_report_agentic import EARLIER, LATEST, write_searches

from infermatrix.report import build_report
from infermatrix.results import collect
from infermatrix.results.failures import JobFailure
from infermatrix.results.store import Store

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
RUNS = ("20261120T011700Z-aaaaaa", "20261122T011700Z-cccccc")
JOBS = (SynthJob(concurrency=(1, 4, 16)),  # deepseek-r1-0528/h200-sglang-fp8: in the catalog
        SynthJob(hardware="B200", concurrency=(1, 4, 16), speed=1.7),
        SynthJob(hardware="GB300", engine="vllm", variant="gone", concurrency=(2, 8)))  # not in it
PAGES = ("index.html", "agentic.html", "catalog.html")

# Every link the page shows now, resolved against it.
STATIC = "Array.from(document.querySelectorAll('a[href]')).map((a) => a.href)"
# Every point's links, as its tooltip, detail panel and table row give them (pages of the table
# and points off-screen included).
POINTS = ("imx.rows.flatMap((r) => [new URL(imx.catalogHref(r), location.href).href]"
          ".concat(r.raw ? [new URL(r.raw, location.href).href] : []))")
IDS = ("Array.from(document.querySelectorAll('[id]')).map((e) => e.id)"
       ".concat(Array.from(document.querySelectorAll('a[name]')).map((a) => a.name))")


def _site(root: Path) -> Path:
    store = root / "history.sqlite"
    for run in RUNS:
        for job in JOBS:
            write_job(root / "runs" / run, job)
        collect([root / "runs" / run], store=store)
    collect([write_searches(root / "searches", [EARLIER, *LATEST])], store=store)
    with Store(store) as db:
        records, raw, searches = db.records(), db.raw_all(), db.agentic()
    out = root / "site"
    broken = JobFailure(run_id=RUNS[-1], job_id="broken-job", recipe=JOBS[2].recipe,
                        workload="fixed-1k-1k", runner="gb300-synth", stage="launch",
                        reason="exited with code 125 before serving")  # the header links its list
    build_report(records, out, raw=raw, title="links", plots=False, agentic=searches,
                 failures=[broken])
    return out


async def _links(page, name: str) -> set[str]:  # noqa: ANN001
    found = set(await page.eval(STATIC))
    if name == "index.html":
        found |= set(await page.eval(POINTS))
        for view in ("chart", "table", "compare", "agentic"):
            await page.eval(f"document.querySelector('nav button[data-view={view}]').click()")
            found |= set(await page.eval(STATIC))
        await page.eval("document.querySelector('#agentic tbody tr[data-row]').click()")
        found |= set(await page.eval(STATIC))  # the detail of a capacity search
    return found


async def _open(page, path: Path) -> None:  # noqa: ANN001
    await page.goto(path.as_uri())
    if path.name == "index.html":
        await page.wait_for("document.body.dataset.ready === '1'")
    else:
        await page.wait_for("document.readyState === 'complete'")


def test_every_link_on_every_page_resolves(chromium: str, tmp_path: Path) -> None:
    site = _site(tmp_path)
    assert all((site / name).is_file() for name in PAGES)

    async def scenario() -> None:
        ids: dict[Path, set[str]] = {}
        links: dict[str, set[str]] = {}
        async with open_page(chromium) as page:
            for name in PAGES:
                await _open(page, site / name)
                if name == "catalog.html":
                    ARTIFACTS.mkdir(exist_ok=True)
                    await page.screenshot(ARTIFACTS / "catalog.png")
                links[name] = await _links(page, name)
                assert page.errors == [], name
            dead = []
            for name, found in links.items():
                for href in sorted(found):
                    url = urlparse(href)
                    if url.scheme in ("http", "https"):
                        continue  # the recipes' published sources: no network here
                    assert url.scheme == "file", (name, href)
                    target = Path(unquote(url.path))
                    if not target.is_file():
                        dead.append((name, href))
                        continue
                    if url.fragment:
                        if target not in ids:
                            await _open(page, target)
                            ids[target] = set(await page.eval(IDS))
                        if unquote(url.fragment) not in ids[target]:
                            dead.append((name, href))
        assert not dead, dead[:10]
        # the crawl covered what it should: every recipe named, raw JSON, the pages' own links
        catalog = {unquote(urlparse(h).fragment) for h in links["index.html"]
                   if urlparse(h).path.endswith("catalog.html")}
        assert {j.recipe for j in JOBS} <= catalog
        assert any("/raw/" in h or h.endswith(".json") for h in links["index.html"])
        assert any(urlparse(h).fragment == "failed" for h in links["index.html"])
        for name in PAGES:
            assert {n for n in PAGES if n != name} <= {Path(urlparse(h).path).name
                                                       for h in links[name]}, name

    asyncio.run(asyncio.wait_for(scenario(), 240))
    page = (site / "catalog.html").read_text()
    assert 'id="deepseek-r1-0528/h200-sglang-fp8"' in page and "--tp 8" in page  # the real entry
    assert f'id="{JOBS[2].recipe}"' in page and "not in the catalog" in page  # a stub for it


def test_a_capacity_only_run_is_marked_simulated(chromium: str, tmp_path: Path) -> None:
    """No level at all, only (simulated) capacity searches: index.html and agentic.html still say
    that every number shown is simulated, in the wording of how it was timed."""
    result = collect([write_searches(tmp_path / "searches", LATEST, launcher="virtual")])
    assert not result.records and result.agentic
    out = build_report([], tmp_path / "site", plots=False, agentic=result.agentic)

    async def scenario() -> None:
        async with open_page(chromium) as page:
            for name in ("index.html", "agentic.html"):
                await _open(page, out["dashboard"].parent / name)
                badge = "document.getElementById('sim-badge')"
                assert await page.eval(f"{badge}.textContent") == "SIMULATED · virtual time", name
                assert await page.eval(f"{badge}.getBoundingClientRect().width > 0"), name
                banner = "document.getElementById('sim-banner')"
                assert await page.eval(f"{banner}.textContent") == (
                    "Simulated: every number shown comes from the simulated engine in virtual "
                    "time, not measured on hardware."), name
                assert await page.eval(f"{banner}.getBoundingClientRect().height > 0"), name
                assert page.errors == [], name

    asyncio.run(asyncio.wait_for(scenario(), 120))
