"""How a conversation id reaches the router, which differs per router.

Affinity only works when the client sends the id where the router reads it; a header the router
ignores silently turns conversation routing into its fallback policy. So the choice follows
the deployment's router (the capacity search maps a recipe's router here):

  trtllm-disaggregated  body ``disaggregated_params.conversation_id`` (router type conversation)
  vllm-router           header ``X-Session-ID``
  dynamo                header ``X-Dynamo-Session-ID``
  sglang-router         header ``X-Session-ID`` (cache_aware routes on the prompt itself and
                        needs no id; the header serves its hash-based policies)

Flag spelling (``--session-affinity``): ``none``, ``trtllm``, ``x-session-id``, ``dynamo``,
``header:NAME``, or a router name from the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .errors import ClientInputError


@dataclass(frozen=True, slots=True)
class Affinity:
    kind: Literal["none", "header", "body"]
    header: str | None = None

    def headers(self, conversation_id: str) -> dict[str, str] | None:
        if self.kind == "header" and self.header:
            return {self.header: conversation_id}
        return None

    def extra_body(self, conversation_id: str) -> dict[str, Any] | None:
        if self.kind == "body":
            return {"disaggregated_params": {"conversation_id": conversation_id}}
        return None

    def describe(self) -> str:
        if self.kind == "header":
            return f"header {self.header}"
        if self.kind == "body":
            return "body disaggregated_params.conversation_id"
        return "none"


NONE = Affinity("none")
TRTLLM = Affinity("body")
X_SESSION_ID = Affinity("header", "X-Session-ID")
DYNAMO = Affinity("header", "X-Dynamo-Session-ID")

ROUTERS: dict[str, Affinity] = {
    "trtllm-disaggregated": TRTLLM,
    "vllm-router": X_SESSION_ID,
    "dynamo": DYNAMO,
    "sglang-router": X_SESSION_ID,
}
_NAMES = {"none": NONE, "trtllm": TRTLLM, "x-session-id": X_SESSION_ID, "dynamo": DYNAMO, **ROUTERS}


def for_router(router: str | None) -> Affinity:
    """The affinity a router reads; no router (one instance) needs none."""
    if router is None:
        return NONE
    try:
        return ROUTERS[router]
    except KeyError:
        raise ClientInputError(
            f"no known session affinity for router {router!r} (known: {', '.join(ROUTERS)})"
        ) from None


def parse(spec: str) -> Affinity:
    key = spec.strip()
    if key.lower().startswith("header:"):
        name = key.split(":", 1)[1].strip()
        if not name or any(c in name for c in " :\r\n"):
            raise ClientInputError(f"bad affinity header name in {spec!r}")
        return Affinity("header", name)
    try:
        return _NAMES[key.lower()]
    except KeyError:
        raise ClientInputError(
            f"unknown session affinity {spec!r} (use none, trtllm, x-session-id, "
            f"dynamo, header:NAME or a router name)"
        ) from None
