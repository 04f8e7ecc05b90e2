"""SSE parser: every framing quirk seen in the wild, at every read boundary."""

from __future__ import annotations

import pytest

from infermatrix.client.sse import SSEParser


def parse_in_pieces(raw: bytes, cuts: list[int]) -> list[str]:
    p = SSEParser()
    out: list[str] = []
    prev = 0
    for c in [*cuts, len(raw)]:
        out += p.feed(raw[prev:c])
        prev = c
    return out + p.flush()


STREAMS = {
    "lf": b'data: {"a":1}\n\ndata: {"a":2}\n\ndata: [DONE]\n\n',
    "crlf": b'data: {"a":1}\r\n\r\ndata: {"a":2}\r\n\r\ndata: [DONE]\r\n\r\n',
    "cr": b'data: {"a":1}\r\rdata: {"a":2}\r\rdata: [DONE]\r\r',
    "no_space": b'data:{"a":1}\n\ndata:{"a":2}\n\ndata:[DONE]\n\n',
    "pings": b': ping\n\ndata: {"a":1}\n\n: keep-alive\ndata: {"a":2}\n\n:\n\ndata: [DONE]\n\n',
    "other_fields": b'event: message\nid: 7\nretry: 10\ndata: {"a":1}\n\ndata: {"a":2}\n\ndata: [DONE]\n\n',
    "no_trailing_blank": b'data: {"a":1}\n\ndata: {"a":2}\n\ndata: [DONE]',
}
EXPECTED = ['{"a":1}', '{"a":2}', "[DONE]"]


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_whole_stream(name: str) -> None:
    assert parse_in_pieces(STREAMS[name], []) == EXPECTED


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_split_at_every_byte(name: str) -> None:
    raw = STREAMS[name]
    for cut in range(1, len(raw)):
        assert parse_in_pieces(raw, [cut]) == EXPECTED, (name, cut)


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_one_byte_reads(name: str) -> None:
    raw = STREAMS[name]
    assert parse_in_pieces(raw, list(range(1, len(raw)))) == EXPECTED


def test_multiline_data_is_joined() -> None:
    assert parse_in_pieces(b"data: a\ndata: b\n\n", []) == ["a\nb"]


def test_events_returned_as_soon_as_complete() -> None:
    p = SSEParser()
    assert p.feed(b'data: {"x":1}\n') == []
    assert p.feed(b"\n") == ['{"x":1}']
    assert p.feed(b": ping\n\n") == []


def test_crlf_split_between_cr_and_lf_does_not_make_an_empty_event_early() -> None:
    p = SSEParser()
    assert p.feed(b"data: a\r") == []
    assert p.feed(b"\ndata: b\r\n\r\n") == ["a\nb"]


def test_utf8_split_across_reads() -> None:
    raw = 'data: {"t":"héllo 世界"}\n\n'.encode()
    for cut in range(1, len(raw)):
        assert parse_in_pieces(raw, [cut]) == ['{"t":"héllo 世界"}']
