"""SLURM node-list / tasks-per-node expansion and gen_yaml.py-style placement."""

from __future__ import annotations

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from infermatrix.catalog.hostlist import (
    Allocation,
    Demand,
    HostlistError,
    compress_tasks_per_node,
    expand_nodelist,
    expand_tasks_per_node,
    place,
)


def test_examples() -> None:
    assert expand_nodelist("gpu-[01-03,07]") == ["gpu-01", "gpu-02", "gpu-03", "gpu-07"]
    assert expand_nodelist("gpu-[08-10],login1") == ["gpu-08", "gpu-09", "gpu-10", "login1"]
    assert expand_nodelist("n[9-11]") == ["n9", "n10", "n11"]
    assert expand_nodelist("r[1-2]-n[1-2]") == ["r1-n1", "r1-n2", "r2-n1", "r2-n2"]
    assert expand_tasks_per_node("4(x3),2") == [4, 4, 4, 2]
    assert expand_tasks_per_node("8") == [8]
    assert Allocation.from_slurm("gpu-[01-03,07]", "4(x3),2").tasks == (4, 4, 4, 2)
    assert Allocation.from_slurm("gpu-[01-04]", "8").tasks == (8, 8, 8, 8)


@pytest.mark.parametrize("bad", ["", "gpu-[03-01]", "gpu-[01", "gpu-01]", "gpu-[a-b]", "a,,b",
                                 "gpu-[[1-2]]"])
def test_bad_nodelists(bad: str) -> None:
    with pytest.raises(HostlistError):
        expand_nodelist(bad)


@pytest.mark.parametrize("bad", ["4(x)", "x", "4(3)", "4,(x2)"])
def test_bad_tasks(bad: str) -> None:
    with pytest.raises(HostlistError):
        expand_tasks_per_node(bad)


def test_mismatched_allocation() -> None:
    with pytest.raises(HostlistError, match="gives 2 nodes.*has 3"):
        Allocation.from_slurm("n[1-3]", "4,4")
    with pytest.raises(HostlistError, match="not inside a SLURM allocation"):
        Allocation.from_env({})


# one bracket group: (first number, count, zero-padded width)
ranges = st.tuples(st.integers(0, 500), st.integers(1, 5), st.integers(1, 4))
prefixes = st.from_regex(r"[a-z][a-z0-9-]{0,6}", fullmatch=True).filter(lambda p: not p[-1].isdigit())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(prefixes, st.lists(ranges, min_size=1, max_size=3)), min_size=1, max_size=4))
def test_nodelist_expansion_matches_construction(groups) -> None:
    text_groups, expected = [], []
    for prefix, specs in groups:
        parts = []
        for lo, count, width in specs:
            hi = lo + count - 1
            width = max(width, len(str(hi)))  # SLURM pads both ends to one width
            lo_s, hi_s = str(lo).zfill(width), str(hi).zfill(width)
            parts.append(lo_s if count == 1 else f"{lo_s}-{hi_s}")
            expected += [f"{prefix}{str(i).zfill(width)}" for i in range(lo, hi + 1)]
        text_groups.append(f"{prefix}[{','.join(parts)}]")
    assert expand_nodelist(",".join(text_groups)) == expected


@given(st.lists(st.integers(1, 72), min_size=1, max_size=30))
def test_tasks_per_node_round_trip(counts: list[int]) -> None:
    text = compress_tasks_per_node(counts)
    assert expand_tasks_per_node(text) == counts
    assert "(x1)" not in text


demands = st.lists(st.builds(Demand, st.sampled_from(["prefill", "decode", "both"]),
                             st.integers(1, 4), st.sampled_from([1, 2, 4, 8, 16])),
                   min_size=1, max_size=3)


@settings(max_examples=300, deadline=None)
@given(demands, st.lists(st.integers(1, 8), min_size=1, max_size=12))
def test_placement(ds: list[Demand], tasks: list[int]) -> None:
    alloc = Allocation(tuple(f"n{i:02d}" for i in range(len(tasks))), tuple(tasks))
    need = sum(d.instances * d.gpus for d in ds)
    if need > alloc.total:
        with pytest.raises(HostlistError, match="cannot hold the topology"):
            place(ds, alloc)
        return
    places = place(ds, alloc)
    assert [(p.pool, p.instance) for p in places] == [
        (i, k) for i, d in enumerate(ds) for k in range(d.instances)]
    used: list[tuple[str, int]] = []
    for p in places:
        d = ds[p.pool]
        assert sum(len(g) for g in p.gpus) == d.gpus
        assert p.role == d.role and len(p.hosts) == len(p.gpus)
        for host, gpus in zip(p.hosts, p.gpus, strict=True):
            assert all(0 <= g < tasks[alloc.nodes.index(host)] for g in gpus)
            used += [(host, g) for g in gpus]
    assert len(used) == len(set(used)) == need  # no GPU twice
    # consecutive tasks: the allocation's order is kept
    order = [(n, g) for n, c in zip(alloc.nodes, tasks, strict=True) for g in range(c)]
    assert used == order[:need]
    heads = [(p.hosts[0], p.port) for p in places]
    assert len(heads) == len(set(heads))  # no port clash on a node


@given(st.integers(1, 8), st.integers(1, 6))
def test_exact_fit_and_one_short(per_node: int, nodes: int) -> None:
    alloc = Allocation.uniform([f"h{i}" for i in range(nodes)], per_node)
    assume(alloc.total > 1)
    place([Demand("both", 1, alloc.total)], alloc)
    with pytest.raises(HostlistError, match=f"{alloc.total + 1} GPUs"):
        place([Demand("both", 1, alloc.total + 1)], alloc)
