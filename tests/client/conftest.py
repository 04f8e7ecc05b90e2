"""Fixtures for the client tests: a real streaming server on 127.0.0.1 per test."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from imx_fake_server import Behaviour, FakeServer  # noqa: E402

from infermatrix.client import BenchConfig  # noqa: E402


@pytest.fixture
def serve() -> Iterator[Callable[..., FakeServer]]:
    """serve(**Behaviour fields) → a started FakeServer, stopped after the test."""
    servers: list[FakeServer] = []

    def start(**kw: Any) -> FakeServer:
        srv = FakeServer(Behaviour(**kw)).start()
        servers.append(srv)
        return srv

    yield start
    for s in servers:
        s.stop()


def _config(srv: FakeServer, **kw: Any) -> BenchConfig:
    base: dict[str, Any] = {
        "base_url": srv.base_url,
        "model": "fake-model",
        "tokenizer": "words",
        "num_prompts": 4,
        "random_input_len": 16,
        "random_output_len": 8,
        "max_concurrency": 4,
        "disable_tqdm": True,
        "timeouts": {"connect": 5, "idle": 5, "total": 30},
    }
    base.update(kw)
    return BenchConfig(**base)


@pytest.fixture
def make_cfg() -> Callable[..., BenchConfig]:
    """make_cfg(server, **BenchConfig fields) → a small, fast benchmark against the server."""
    return _config


@pytest.fixture(scope="session")
def hf_tokenizer_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real byte-level BPE tokenizer.json, trained here on generated text (nothing downloaded)."""
    import random

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    rng = random.Random(0)
    syll = ["ka", "to", "ri", "men", "sol", "ver", "da", "lin", "qu", "ex", "or", "an"]
    corpus = [
        " ".join("".join(rng.choice(syll) for _ in range(rng.randint(1, 3))) for _ in range(40))
        + rng.choice([".", "!", "?", ","])
        for _ in range(300)
    ]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(corpus, trainer)
    d = tmp_path_factory.mktemp("tok")
    tok.save(str(d / "tokenizer.json"))
    return d
