"""The requests a published row's client sent, as the simulator replays them: their send times
(all at once, or at a request rate with bench_serving's gamma gaps) and their prompt and output
lengths (the row's own, drawn as its ``range_ratio`` says, or ShareGPT-like), all seeded so a
row always simulates the same requests.
"""

from __future__ import annotations

import numpy as np

from .published import PublishedRow


def row_arrivals(row: PublishedRow, n: int) -> list[float]:
    """Send times of a row's ``n`` requests: all at 0, or at ``request_rate`` with gamma gaps
    of shape ``burstiness`` (mean 1 / rate), seeded, the first sent at once."""
    if row.request_rate is None:
        return [0.0] * n
    rng = np.random.default_rng(0)
    gaps = rng.gamma(row.burstiness, 1.0 / (row.request_rate * row.burstiness), n - 1)
    return [0.0, *np.cumsum(gaps).tolist()]


def row_lengths(row: PublishedRow, n: int) -> list[tuple[int, int]]:
    """(prompt, output) tokens of a row's ``n`` requests: the row's own, or drawn as its
    ``range_ratio`` says (seeded, so a row always simulates the same requests). The interval
    is the client's (``client.datasets.draw_len``), found from the mean; the simulator may not
    import the client (tests/test_import_rules.py)."""
    assert row.isl and row.osl
    if row.lengths:
        return sharegpt_lengths(row.isl, row.osl, n, trimmed=row.lengths == "sharegpt")
    if row.range_ratio is None:
        return [(row.isl, row.osl)] * n
    rng = np.random.default_rng(1)

    def draw(mean: int) -> list[int]:
        top = max(1, round(2 * mean / (1 + row.range_ratio)))
        low = max(1, min(top, round(row.range_ratio * top)))
        return rng.integers(low, top, n, endpoint=True).tolist()

    return list(zip(draw(row.isl), draw(row.osl), strict=True))


def sharegpt_lengths(isl: int, osl: int, n: int, *, trimmed: bool) -> list[tuple[int, int]]:
    """``n`` (prompt, reply) lengths standing in for a ShareGPT sample, seeded, whose means are
    ``isl`` and ``osl``. The file cannot be read here, so each length is drawn from the
    exponential distribution (the least presumptuous one with a given positive mean) and the
    pairs the client would drop are dropped (``trimmed``: vLLM's filter, else SGLang's: the
    rule ``client.datasets.sharegpt_keeps`` applies to a real file, restated here because the
    simulator may not import the client); the scales are then corrected until the kept pairs'
    means match. What matters is the spread: a batch of requests sent at once is done only
    when its longest reply is, so a run of ShareGPT requests takes several times as long as
    the same tokens at their mean lengths."""
    scale_in, scale_out = float(isl), float(osl)
    low = 4 if trimmed else 2
    for _ in range(8):  # the filter shortens the means: rescale and draw again
        rng = np.random.default_rng(2)  # seeded: a row always simulates the same requests
        pairs = np.rint(rng.exponential((scale_in, scale_out), (4 * n + 64, 2)))
        ok = (pairs >= low).all(axis=1)
        if trimmed:
            ok &= (pairs[:, 0] <= 1024) & (pairs.sum(axis=1) <= 2048)
        kept = pairs[ok][:n]
        if len(kept) < n:
            kept_by = ("4..1,024-token prompts, pairs up to 2,048" if trimmed
                       else "2 tokens or more each")
            raise ValueError(f"cannot draw {n} ShareGPT-like requests of means {isl}/{osl} "
                             f"that the client keeps ({kept_by})")
        mean_in, mean_out = kept.mean(axis=0)
        if abs(mean_in / isl - 1) < 0.005 and abs(mean_out / osl - 1) < 0.005:
            break
        scale_in *= isl / mean_in
        scale_out *= osl / mean_out
    return [(int(a), int(b)) for a, b in kept]
