"""Incremental Server-Sent-Events parser.

Feed it raw bytes as they arrive; it returns the ``data`` payload of every event completed by
those bytes. It copes with what servers really send: ``: ping`` comment lines, ``data:`` with or
without the space, LF / CRLF / CR line ends, events (and even a CRLF pair) split across reads,
and a last event with no blank line after it (use :meth:`flush` at end of stream).
Fields other than ``data`` (event, id, retry) are ignored: OpenAI-style streams do not use them.
"""

from __future__ import annotations


class SSEParser:
    __slots__ = ("_buf", "_data", "_skip_lf")

    def __init__(self) -> None:
        self._buf = b""
        self._data: list[bytes] = []  # data lines of the event being built
        self._skip_lf = False  # last read ended in CR: a leading LF belongs to it

    def feed(self, chunk: bytes) -> list[str]:
        if not chunk:
            return []
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        buf = self._buf + chunk if self._buf else chunk
        if b"\r" in buf:
            # Normalise line ends. A trailing CR may be the first half of a CRLF.
            if buf.endswith(b"\r"):
                self._skip_lf = True
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        events: list[str] = []
        start = 0
        while True:
            end = buf.find(b"\n", start)
            if end < 0:
                break
            self._line(buf[start:end], events)
            start = end + 1
        self._buf = buf[start:]
        return events

    def flush(self) -> list[str]:
        """End of stream: complete a pending event that lacked its closing blank line."""
        events: list[str] = []
        if self._buf:
            self._line(self._buf, events)
            self._buf = b""
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[str]) -> None:
        if not line:
            if self._data:
                events.append(b"\n".join(self._data).decode("utf-8", "replace"))
                self._data = []
            return
        if line[:1] == b":":  # comment / keep-alive ping
            return
        name, sep, value = line.partition(b":")
        if name != b"data":
            return
        if not sep:
            value = b""
        elif value[:1] == b" ":
            value = value[1:]
        self._data.append(value)
