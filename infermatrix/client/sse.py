"""Server-Sent-Events parsing in bulk, with a receive stamp per event.

The receive path only stores each piece of body with the time it arrived; this parser turns a
batch of such pieces into events later, in C-speed operations on the whole batch (one join, one
split), and gives each event the stamp of the piece that completed it — the same stamp an
event-by-event parser would have given it.

It copes with what servers really send: ``: ping`` comment lines, ``data:`` with or without
the space, LF / CRLF / CR line ends, events (and even a CRLF pair) split across pieces,
multi-line data, and a last event with no blank line after it (:meth:`flush` at end of stream).
Fields other than ``data`` (event, id, retry) are ignored: OpenAI-style streams do not use them.
A ``data:`` event with only whitespace is a keep-alive, not an event.
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate

Stamped = tuple[float, bytes]  # (receive time, raw data payload of one event)
_SPACE = b" \t\n\r\x0b\x0c"  # what bytes.strip() strips (b"" is "in" it too)


class SSEParser:
    __slots__ = ("_cr", "_skip_lf", "_tail", "_tail_len")

    def __init__(self) -> None:
        # everything after the last blank line (the event being received), in parts: a long
        # line arriving piece by piece is joined once, when it ends, not on every read
        self._tail: list[bytes] = []
        self._tail_len = 0
        self._cr = False  # the stream uses CR or CRLF line ends: normalise each piece
        self._skip_lf = False  # the last piece ended in CR: a leading LF belongs to it

    @property
    def pending(self) -> int:
        """Bytes of the incomplete event held (an endless line or event grows this)."""
        return self._tail_len

    def feed_stamped(self, pieces: list[bytes], stamps: list[float]) -> list[Stamped]:
        """Events completed by ``pieces`` (received at ``stamps``), in order."""
        if not any(b"\n" in p or b"\r" in p for p in pieces):  # no line ends: nothing completes
            self._tail += pieces
            self._tail_len += sum(map(len, pieces))
            self._skip_lf = self._skip_lf and not any(pieces)
            return []
        body = b"".join(pieces)
        if not self._cr and b"\r" in body:
            self._cr = True
        if self._cr:
            pieces = self._normalise(pieces)
            body = b"".join(pieces)
        tail = b"".join(self._tail)
        blocks = (tail + body if tail else body).split(b"\n\n")
        last = blocks.pop()
        self._tail, self._tail_len = [last] if last else [], len(last)
        out: list[Stamped] = []
        if not blocks:
            return out
        ends = list(accumulate(map(len, pieces), initial=len(tail)))  # ends[j + 1]: piece j
        off = 0
        for block in blocks:
            off += len(block) + 2  # the blank line that ends this block ends at `off`
            if block[:6] == b"data: " and block[6:7] not in _SPACE and b"\n" not in block:
                data: bytes | None = block[6:]  # the usual event, decided inline
            else:
                data = _payload(block)
            if data is not None:
                out.append((stamps[bisect_left(ends, off, 1) - 1], data))
        return out

    def flush_stamped(self, t: float) -> list[Stamped]:
        """End of stream at ``t``: complete a pending event that lacked its closing blank line."""
        tail = b"".join(self._tail)
        self._tail, self._tail_len = [], 0
        data = _payload(tail) if tail else None
        return [] if data is None else [(t, data)]

    def feed(self, chunk: bytes) -> list[str]:
        """One piece at a time, payloads as text (for callers that need no stamps)."""
        return [_text(d) for _, d in self.feed_stamped([chunk], [0.0])]

    def flush(self) -> list[str]:
        return [_text(d) for _, d in self.flush_stamped(0.0)]

    def _normalise(self, pieces: list[bytes]) -> list[bytes]:
        """CRLF and CR → LF, piece by piece (so piece lengths still locate the stamps)."""
        out = []
        skip = self._skip_lf
        for p in pieces:
            if not p:
                out.append(p)  # keep one entry per piece: its index finds its stamp
                continue
            if skip and p[:1] == b"\n":
                p = p[1:]
            skip = p[-1:] == b"\r"
            out.append(p.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
        self._skip_lf = skip
        return out


def _payload(block: bytes) -> bytes | None:
    """The data of one event block (lines without a blank one), None if it has no data."""
    if block[:5] == b"data:" and b"\n" not in block:  # the usual event: one data line
        data = block[6:] if block[5:6] == b" " else block[5:]
    else:
        values = []
        for line in block.split(b"\n"):
            if not line or line[:1] == b":":  # empty, or a comment / keep-alive ping
                continue
            name, _, value = line.partition(b":")
            if name == b"data":
                values.append(value[1:] if value[:1] == b" " else value)
        if not values:
            return None
        data = b"\n".join(values)
    return data if data.strip() else None


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")
