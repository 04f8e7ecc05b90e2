"""The frame every report page shares: head (style inline), header (title, counts, simulated
badge, links to the other pages, theme switch), the simulated banner, and the theme script.

One self-contained file per page (no network): it works from file:// and from GitHub Pages.
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from . import simulated
from .dashboard_assets import CSS, THEME_JS
from .simulated import SimMark


def nav_links(nav: Mapping[str, str] | None) -> str:
    """label → relative page, as header links (the report's pages link each other)."""
    return "".join(f'<a class="page-link" href="{html.escape(href)}">{html.escape(label)}</a>'
                   for label, href in (nav or {}).items())


def header_html(*, title: str, meta: str, nav: Mapping[str, str] | None = None,
                mark: SimMark | None = None, buttons: str = "", noun: str = "result") -> str:
    """``meta`` is HTML (the caller escapes its parts); ``buttons``: the page's own view switches."""
    return f"""<header>
  <h1>{html.escape(title)}</h1>
  <span class="meta">{meta}{simulated.badge(mark)}</span>
  <nav>{buttons}{nav_links(nav)}
    <button id="theme" title="switch light / dark">◐ theme</button>
  </nav>
</header>
{simulated.banner(mark, noun)}"""


def page_html(*, title: str, meta: str, body: str, nav: Mapping[str, str] | None = None,
              mark: SimMark | None = None, noun: str = "result") -> str:
    """A static page: the shared frame around ``body`` (HTML)."""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{CSS}</style>
</head>
<body>
{header_html(title=title, meta=meta, nav=nav, mark=mark, noun=noun)}
<main>
{body}
</main>
<script>{THEME_JS}</script>
</body>
</html>
"""
