"""Hugging Face hub ids for `--tokenizer`: the local cache first, and a fast, clear failure
when the hub cannot be reached (no ~20 s of retries before the same error).

Only what `bench` needs: a hub id's shape, its tokenizer.json in the local hub cache
(``$HF_HUB_CACHE``, ``$HF_HOME/hub`` or ``~/.cache/huggingface/hub``), and whether the hub
answers at all (``$HF_HUB_OFFLINE``, or one TCP connect to ``$HF_ENDPOINT``).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path
from urllib.parse import urlsplit

# "gpt2", "org/name": letters, digits, '-', '_', '.'; no '--' or '..' (the hub's own rules)
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]{0,95}(/[A-Za-z0-9][\w.-]{0,95})?")
CONNECT_TIMEOUT_S = 3.0
_TRUE = {"1", "on", "yes", "true"}
_PROXIES = ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")


def is_hub_id(spec: str) -> bool:
    return bool(HUB_ID.fullmatch(spec)) and "--" not in spec and ".." not in spec


def cache_root() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    home = os.environ.get("HF_HOME")
    return (Path(home).expanduser() if home else Path.home() / ".cache" / "huggingface") / "hub"


def cached_file(repo_id: str, name: str = "tokenizer.json") -> Path | None:
    """``name`` of the cached snapshot of ``repo_id`` (the one refs/main points at, else any)."""
    repo = cache_root() / ("models--" + repo_id.replace("/", "--"))
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        pinned = snapshots / ref.read_text(encoding="utf-8").strip() / name
        if pinned.is_file():
            return pinned
    found = sorted(snapshots.glob(f"*/{name}")) if snapshots.is_dir() else []
    return found[0] if found else None


def unreachable() -> str | None:
    """Why the hub cannot be asked (offline mode, or its host refuses or does not answer), or
    None. Behind a proxy the library's own connection is the only fair test: None."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE:
        return "HF_HUB_OFFLINE is set"
    if any(os.environ.get(v) for v in _PROXIES):
        return None
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host = url.hostname or "huggingface.co"
    port = url.port or (80 if url.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S):
            return None
    except OSError as exc:
        return f"cannot reach {host}:{port}: {exc.strerror or exc}"
