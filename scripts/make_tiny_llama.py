"""Make a tiny, randomly initialised Llama + byte-level BPE tokenizer, fully offline.

Owns the test model that the real-vLLM integration tests serve: a ``LlamaForCausalLM`` (hidden 64,
2 layers, 2 heads of dim 32, 1024 positions) with a ~1000-token tokenizer trained on this Python's
own standard-library sources, plus a chat template so ``/v1/chat/completions`` works. Nothing is
fetched from any hub. Run with the vLLM venv's python (it needs torch, tokenizers, transformers):

    DIR/venv/bin/python scripts/make_tiny_llama.py DIR/tiny-llama
    DIR/venv/bin/python scripts/make_tiny_llama.py DIR/tiny-llama-seed1 --seed 1

``--seed`` makes an independent model of the same shape and tokenizer (the tokenizer is trained the same way
whatever the seed): a drafter for the target whose guesses are unrelated to it, so acceptance is near 0.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

VOCAB_SIZE = 1000
TRAIN_BYTES = 3_000_000
SEED = 0
SPECIAL_TOKENS = ["<s>", "</s>", "<pad>"]
# bos_token is emitted by the template because vLLM tokenizes rendered chat prompts without
# adding special tokens.
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "<|{{ message['role'] }}|>\n{{ message['content'] }}\n"
    "{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)


def training_text(limit_bytes: int = TRAIN_BYTES) -> Iterator[str]:
    """Stdlib sources in sorted order, so the tokenizer is the same on every machine with 3.11."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    seen = 0
    for path in sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py")):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        yield text
        seen += len(text)
        if seen >= limit_bytes:
            return


def make_tokenizer(out: Path) -> object:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(training_text(), trainer)
    bos_id = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos_id)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        model_max_length=1024,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out))
    # Newer transformers write the template to chat_template.jinja only; older readers (and the
    # brief for this model) look in tokenizer_config.json, so put it there too.
    cfg_path = out / "tokenizer_config.json"
    cfg = json.loads(cfg_path.read_text())
    cfg["chat_template"] = CHAT_TEMPLATE
    cfg_path.write_text(json.dumps(cfg, indent=2) + "\n")
    return fast


def make_model(out: Path, tokenizer: object, seed: int = SEED) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),  # type: ignore[arg-type]
        hidden_size=64,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        head_dim=32,
        max_position_embeddings=1024,
        bos_token_id=tokenizer.bos_token_id,  # type: ignore[attr-defined]
        eos_token_id=tokenizer.eos_token_id,  # type: ignore[attr-defined]
        pad_token_id=tokenizer.pad_token_id,  # type: ignore[attr-defined]
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config).to(torch.float32)
    model.save_pretrained(str(out), safe_serialization=True)


def main(argv: list[str]) -> int:
    seed = SEED
    if len(argv) == 3 and argv[1] == "--seed" and argv[2].isdigit():
        seed = int(argv[2])
    elif len(argv) != 1:
        print("usage: make_tiny_llama.py OUT_DIR [--seed N]", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = make_tokenizer(out)
    make_model(out, tokenizer, seed)
    print(f"tiny llama saved to {out} (vocab {len(tokenizer)})")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
