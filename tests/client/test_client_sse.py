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


def completing_piece(raw: bytes, cuts: list[int]) -> list[int]:
    """Reference: for each event, the index of the piece whose bytes completed it (found by
    re-parsing every prefix from scratch, one piece at a time)."""
    bounds = [*cuts, len(raw)]
    out: list[int] = []
    for j, end in enumerate(bounds):
        p = SSEParser()
        n = len(p.feed(raw[:end]))
        out += [j] * (n - len(out))
    return out


@pytest.mark.parametrize("name", sorted(STREAMS))
def test_bulk_stamps_are_those_of_the_completing_piece(name: str) -> None:
    import random

    raw = STREAMS[name].replace(b"[DONE]", b'{"a":3}')
    rng = random.Random(name)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(raw)), rng.randint(0, min(12, len(raw) - 1))))
        pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
        stamps = [float(i) for i in range(len(pieces))]
        p = SSEParser()
        got: list[tuple[float, bytes]] = []
        i = 0
        while i < len(pieces):  # drained in batches of random size, as the client does
            k = rng.randint(1, 4)
            got += p.feed_stamped(pieces[i : i + k], stamps[i : i + k])
            i += k
        assert [d for _, d in got] == [b'{"a":1}', b'{"a":2}', b'{"a":3}'][: len(got)]
        expected = completing_piece(raw, cuts)
        assert [int(t) for t, _ in got] == expected[: len(got)], (name, cuts)
        assert len(got) == len(expected)
        tail = p.flush_stamped(99.0)
        assert len(got) + len(tail) == 3


def test_whitespace_only_data_is_a_keep_alive() -> None:
    assert parse_in_pieces(b"data: \n\ndata:\n\ndata: x\n\n", []) == ["x"]


def test_an_endless_line_is_held_once_and_reported() -> None:
    p = SSEParser()
    p.feed_stamped([b'data: {"a": 1}\n\ndata: ', b"x" * 1000], [1.0, 2.0])
    for _ in range(50):
        assert p.feed_stamped([b"x" * 1000], [3.0]) == []
    assert p.pending == len(b"data: ") + 51 * 1000


def test_empty_pieces_keep_the_stamps_in_step() -> None:
    p = SSEParser()
    got = p.feed_stamped([b"data: a\r\n", b"", b"\r\n", b"data: b\r\n\r\n"], [1.0, 2.0, 3.0, 4.0])
    assert got == [(3.0, b"a"), (4.0, b"b")]


def reference(raw: bytes) -> list[bytes]:
    """The SSE rules, line by line (no bulk tricks): the events a whole stream holds."""
    text = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    events: list[bytes] = []
    data: list[bytes] = []
    for line in text.split(b"\n")[:-1]:  # the last part has no line end yet
        if not line:
            if data and b"\n".join(data).strip():
                events.append(b"\n".join(data))
            data = []
        elif not line.startswith(b":"):
            name, _, value = line.partition(b":")
            if name == b"data":
                data.append(value[1:] if value.startswith(b" ") else value)
    return events


def test_bulk_parser_matches_the_line_rules_on_random_streams() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    line = st.sampled_from(
        [
            b'data: {"a":1}',
            b"data:x",
            b"data",
            b"data: ",
            b": ping",
            b"event: e",
            b"id: 3",
            b"data: a b",
            b"",
        ]
    )
    ending = st.sampled_from([b"\n", b"\r\n", b"\r"])
    part = st.tuples(line, ending).map(lambda t: t[0] + t[1])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(part, max_size=25), st.data())
    def check(parts: list[bytes], draw: st.DataObject) -> None:
        raw = b"".join(parts)
        cuts = sorted(set(draw.draw(st.lists(st.integers(0, len(raw)), max_size=8))))
        pieces = [raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True)]
        p = SSEParser()
        got = p.feed_stamped(pieces, [float(i) for i in range(len(pieces))])
        assert [d for _, d in got] == reference(raw)
        assert [t for t, _ in got] == sorted(t for t, _ in got)

    check()
