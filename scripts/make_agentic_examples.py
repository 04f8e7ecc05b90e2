#!/usr/bin/env python3
"""Generate the small example agentic trace set in examples/agentic/ (deterministic).

    python scripts/make_agentic_examples.py [--out examples/agentic] [--seed 7]

Writes a manifest + per-task JSONL of turns (the replay format of docs/agentic.md: each line
one turn with conversation_id, the OpenAI messages the turn appends, target_output_tokens and
simulated_tool_delay_ms_after) and a Mooncake-style JSONL of the same sessions
(input_length, output_length, hash_ids over 16-token blocks). Text is made of plain words so
that, without a tokenizer, one word is one token for the client and the simulated engine.
"""

from __future__ import annotations

import argparse
import json
import math
import random
from pathlib import Path

VOCAB = (
    "def",
    "return",
    "import",
    "class",
    "self",
    "file",
    "test",
    "error",
    "line",
    "value",
    "list",
    "path",
    "config",
    "function",
    "module",
    "call",
    "args",
    "result",
    "check",
    "update",
    "fix",
    "build",
    "run",
    "output",
    "input",
    "parse",
    "read",
    "write",
    "index",
    "count",
    "name",
    "type",
    "string",
    "number",
    "print",
    "assert",
    "raise",
    "try",
    "except",
    "for",
    "while",
    "if",
    "else",
    "open",
    "close",
    "data",
    "key",
    "item",
    "items",
    "map",
    "filter",
    "sort",
    "merge",
    "patch",
    "diff",
    "commit",
    "branch",
    "log",
)
TASKS = 4
BLOCK = 16  # Mooncake hash-id block size of the example


def words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(n))


def lognormal_int(rng: random.Random, median: float, sigma: float, lo: int, hi: int) -> int:
    return max(lo, min(hi, round(median * math.exp(rng.gauss(0, sigma)))))


def make(out: Path, seed: int) -> None:
    rng = random.Random(seed)
    system = "You are a coding agent. " + words(random.Random(f"{seed}:system"), 200)
    (out / "tasks").mkdir(parents=True, exist_ok=True)
    manifest = {
        "format": "infermatrix-agentic-trace",
        "version": 1,
        "context": "delta",
        "generator": f"scripts/make_agentic_examples.py --seed {seed}",
        "tasks": [],
    }
    mooncake: list[dict[str, object]] = []
    t_ms = 0
    for task in range(TASKS):
        cid = f"example-{task:03d}"
        n_turns = rng.randint(3, 6)
        context = len(system.split())
        hash_ids = list(range(context // BLOCK))  # the shared system prompt's full blocks
        lines = []
        for turn in range(n_turns):
            user = ("Task: " if turn == 0 else "Tool result: ") + words(rng, rng.randint(40, 240))
            msgs = ([{"role": "system", "content": system}] if turn == 0 else []) + [
                {"role": "user", "content": user}
            ]
            target = lognormal_int(rng, 60, 0.8, 8, 400)
            delay_ms = lognormal_int(rng, 1000, 0.5, 100, 8000)
            lines.append(
                {
                    "conversation_id": cid,
                    "turn": turn,
                    "messages": msgs,
                    "target_output_tokens": target,
                    "simulated_tool_delay_ms_after": delay_ms,
                }
            )
            context += len(user.split())
            blocks = context // BLOCK + (1 if context % BLOCK else 0)
            while len(hash_ids) < blocks:
                hash_ids.append(1000 * (task + 1) + len(hash_ids))
            mooncake.append(
                {
                    "timestamp": t_ms,
                    "input_length": context,
                    "output_length": target,
                    "hash_ids": hash_ids[:blocks],
                }
            )
            context += target  # the answer joins the context of the next turn
            t_ms += delay_ms
        path = out / "tasks" / f"{cid}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        manifest["tasks"].append({"id": cid, "file": f"tasks/{cid}.jsonl", "turns": n_turns})
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    (out / "mooncake.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in mooncake), encoding="utf-8"
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--out", type=Path, default=Path(__file__).resolve().parent.parent / "examples" / "agentic"
    )
    p.add_argument("--seed", type=int, default=7)
    args = p.parse_args()
    make(args.out, args.seed)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
