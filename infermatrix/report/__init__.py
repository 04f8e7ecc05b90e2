"""Report: matplotlib plots, the static HTML dashboard, the markdown job summary."""

from .build import build_report, build_run_report

__all__ = ["build_report", "build_run_report"]
