#!/usr/bin/env python3
"""Build a tiny Llama checkpoint for vLLM's CPU build, from nothing downloaded.

    python scripts/make_tiny_model.py OUT_DIR [--layers 2] [--hidden 256] [--vocab 8000]

Writes OUT_DIR/config.json (LlamaForCausalLM), generation_config.json and a byte-level BPE
tokenizer (tokenizer.json + tokenizer_config.json, PreTrainedTokenizerFast with bos/eos/pad
and a trivial chat template) trained with the `tokenizers` library on the Python standard
library's own .py files (~1 s). No weights: serve it with ``--load-format dummy`` (random
weights; the text is nonsense, the shapes and the work per token are real). Idempotent: an
existing complete directory is left as it is unless --force.
"""

from __future__ import annotations

import argparse
import json
import sys
import sysconfig
from pathlib import Path

SPECIAL = ["<unk>", "<s>", "</s>", "<pad>"]
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant: {% endif %}"
)
FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
         "special_tokens_map.json")


def corpus(limit_bytes: int = 8_000_000) -> list[str]:
    """The standard library's .py files (always on the machine), capped for speed."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    paths, total = [], 0
    for path in sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py")):
        size = path.stat().st_size
        if total + size > limit_bytes:
            break
        paths.append(str(path))
        total += size
    return paths


def train_tokenizer(vocab: int):  # -> tokenizers.Tokenizer
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train(corpus(), trainer)
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def llama_config(vocab: int, args: argparse.Namespace) -> dict[str, object]:
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": args.hidden, "intermediate_size": args.hidden * 2,
        "num_hidden_layers": args.layers, "num_attention_heads": args.heads,
        "num_key_value_heads": args.kv_heads, "head_dim": args.hidden // args.heads,
        "vocab_size": vocab, "max_position_embeddings": args.max_len,
        "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "bos_token_id": SPECIAL.index("<s>"), "eos_token_id": SPECIAL.index("</s>"),
        "pad_token_id": SPECIAL.index("<pad>"),
    }


def build(out: Path, args: argparse.Namespace) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / ".gitignore").write_text("*\n")  # a built artefact: never committed
    tok = train_tokenizer(args.vocab)
    tok.save(str(out / "tokenizer.json"))
    vocab = tok.get_vocab_size()
    tokens = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}
    (out / "special_tokens_map.json").write_text(json.dumps(tokens, indent=2))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": args.max_len,
        "add_bos_token": False, "add_eos_token": False, "chat_template": CHAT_TEMPLATE, **tokens,
    }, indent=2))
    cfg = llama_config(vocab, args)
    (out / "generation_config.json").write_text(json.dumps({
        "bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"],
        "pad_token_id": cfg["pad_token_id"]}, indent=2))
    (out / "config.json").write_text(json.dumps(cfg, indent=2))  # last: marks the dir complete


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--kv-heads", type=int, default=2)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--max-len", type=int, default=2048)
    p.add_argument("--force", action="store_true", help="rebuild even when complete")
    args = p.parse_args(argv)
    if not args.force and all((args.out / f).is_file() for f in FILES):
        print(f"tiny model already at {args.out}", file=sys.stderr)
        return 0
    build(args.out, args)
    print(f"tiny model written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
