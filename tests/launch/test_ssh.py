"""SSH backend against a fake `ssh`: the Ascend 1P1D deployment (SGLang prefill and decode
instances of two nodes each, sglang-router on the first host) placed on the fleet's fixed hosts,
served over loopback "hosts" 127.x.y.1…4, and torn down by killing exactly our process groups."""

from __future__ import annotations

import hashlib
import json
import shlex

from launch_helpers import FakeCluster, run

from infermatrix.catalog.loader import load_catalog
from infermatrix.engines import render

RECIPE = "deepseek-v3.2/ascend-910c-sglang-w8a8-1p1d"


def test_ascend_over_ssh(fake_cluster: FakeCluster, monkeypatch, tmp_path) -> None:  # noqa: ANN001
    monkeypatch.setenv("FAKEBIN_SIM_RECIPE", RECIPE)
    monkeypatch.setenv("FAKEBIN_SIM_PORTS", "6688")  # the router simulates; workers are stubs
    hosts = [fake_cluster.node(i) for i in range(4)]
    remote = tmp_path / "remote"
    fake_cluster.edit_fleet("ascend-a3", hosts=hosts, workdir=str(remote), ssh_user="bench",
                            env={"NETWORK_INTERFACE": "lo"})
    rc = run(fake_cluster.root, fake_cluster.out, "a1", RECIPE, "ascend-a3", [1, 2],
             "--ready-timeout", "120")
    job_dir, manifest = fake_cluster.manifest("a1")
    assert rc == 0 and manifest["status"] == "ok", manifest
    scope = f"imx-a1-{hashlib.sha256(manifest['job']['id'].encode()).hexdigest()[:8]}"
    base = f"{remote}/{scope}"

    calls = fake_cluster.calls("ssh")
    launches = {c[7]: c for c in calls if "exec" in c[-1]}
    assert sorted(launches) == hosts  # one process per node, the router beside prefill's head
    for argv in calls:
        assert argv[:6] == ["-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "-l", "bench"]
    router = next(c for c in calls if "sglang_router" in c[-1])
    assert router[6:8] == ["--", hosts[0]]  # `--` first: no host is read as an ssh option
    words = shlex.split(router[8])
    assert words[:7] == ["mkdir", "-p", f"{base}/router", "&&", "cd", f"{base}/router", "&&"]
    assert words[7:12] == ["echo", "$$", ">", f"{base}/router.pid", "&&"]
    # after `exec`: the fleet's env, then exactly the command engines/ renders for these hosts
    cat = load_catalog(fake_cluster.root)
    bound = {"MODEL": cat.models["deepseek-v3.2"].hf_id, "PORT": "8000", "NETWORK_INTERFACE": "lo",
             **{f"NODE_{i}": h for i, h in enumerate(hosts)}}
    rendered = render(cat, RECIPE, placeholders=bound)
    assert words[12:] == ["exec", "env", "--", "NETWORK_INTERFACE=lo", *rendered.router.argv]
    assert rendered.router.argv[:4] == ("python", "-m", "sglang_router.launch_router",
                                        "--pd-disaggregation")
    for proc in rendered.processes:
        cmd = shlex.split(next(c for c in calls if f"/{proc.name}.pid" in c[-1] and "exec" in c[-1])[-1])
        assert cmd[cmd.index("exec") + 1:][-len(proc.argv):] == list(proc.argv)
    prefill = shlex.split(next(c for c in calls if "prefill-0-node-1" in c[-1])[-1])
    assert prefill[prefill.index("exec") + 1] == "env"
    assert "GLOO_SOCKET_IFNAME=lo" in prefill  # ${NETWORK_INTERFACE} from the fleet entry
    assert prefill[prefill.index("--host") + 1] == hosts[1]
    assert prefill[prefill.index("--node-rank") + 1] == "1"

    # teardown: TERM then KILL on each host, naming only our pid files
    kills = [c for c in calls if c[-1].startswith("for f in")]
    assert sorted(c[7] for c in kills if "kill -KILL" in c[-1]) == hosts
    for c in kills:
        assert all(f.startswith(f"{base}/") for f in shlex.split(c[-1]) if f.endswith(".pid"))
    for conc in (1, 2):
        result = json.loads((job_dir / f"conc-{conc}.json").read_text())
        assert result["completed"] > 0 and result["failed"] == 0
        assert result["infermatrix"]["launcher"] == "ssh"
