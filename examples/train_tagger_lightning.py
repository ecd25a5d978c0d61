"""Train a POS tagger with Lightning and watch its calibration in TensorBoard every epoch.

The tagger emits per-token tag probabilities: the CRF's posterior marginals
(``--model crf``, :class:`calib_metrics.models.crf.CRFTagger` trained by minibatch Adam
on its negative log-likelihood) or a BiLSTM's softmax (``--model bilstm``). One line adds
:class:`calib_metrics.callbacks.CalibrationMonitor` to the Trainer; it logs the
reliability diagram, the per-tag errors and the calibration error with its 95% interval
at every validation epoch.

Run (UD English-EWT from ``../shared/data``, or ``--data DIR``; ``--synthetic`` for an
HMM-generated corpus that needs no download)::

    python examples/train_tagger_lightning.py --epochs 4
    python examples/train_tagger_lightning.py --synthetic --model bilstm
    tensorboard --logdir runs/tagger
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer, seed_everything
from lightning.pytorch.loggers import TensorBoardLogger
from torch import Tensor, nn
from torch.utils.data import DataLoader

from calib_metrics.callbacks import CalibrationMonitor
from calib_metrics.models.crf import CRFTagger
from calib_metrics.paper.locations import find_dataset
from calib_metrics.paper.tagging import (
    TaggedSentence,
    Vocabulary,
    encode_batch,
    read_tagged_sentences,
)

PAD = -100


def synthetic_corpus(
    n_sentences: int, *, n_tags: int = 12, n_words: int = 400, seed: int = 0
) -> list[TaggedSentence]:
    """Sentences sampled from a random HMM whose words are ambiguous between a few tags."""
    g = torch.Generator().manual_seed(seed)
    transitions = torch.softmax(torch.randn(n_tags, n_tags, generator=g) * 2.5, -1)
    start = torch.softmax(torch.randn(n_tags, generator=g), -1)
    # Each word belongs mostly to one tag, sometimes to another: the tagger's ambiguity.
    emissions = torch.softmax(torch.randn(n_tags, n_words, generator=g) * 3.0, -1)
    out: list[TaggedSentence] = []
    for _ in range(n_sentences):
        length = int(torch.randint(4, 25, (), generator=g))
        tag = int(torch.multinomial(start, 1, generator=g))
        words, tags = [], []
        for _ in range(length):
            words.append(f"w{int(torch.multinomial(emissions[tag], 1, generator=g))}")
            tags.append(f"T{tag}")
            tag = int(torch.multinomial(transitions[tag], 1, generator=g))
        out.append((words, tags))
    return out


def load_corpus(args: argparse.Namespace) -> tuple[list[TaggedSentence], list[TaggedSentence], str]:
    """(train, dev, description) from UD English-EWT, or from the synthetic HMM."""
    if not args.synthetic:
        try:
            folder = find_dataset("ud-english-ewt", args.data)
        except FileNotFoundError as err:
            if args.data is not None:
                raise
            print(f"{err}; using synthetic data (--synthetic)", file=sys.stderr)
        else:
            train = read_tagged_sentences(
                folder / "en_ewt-ud-train.conllu.gz", args.column, limit=args.train_sentences
            )
            dev = read_tagged_sentences(
                folder / "en_ewt-ud-dev.conllu.gz", args.column, limit=args.dev_sentences
            )
            return train, dev, f"UD English-EWT {args.column} ({folder})"
    corpus = synthetic_corpus(args.train_sentences + args.dev_sentences, seed=args.seed)
    return corpus[: args.train_sentences], corpus[args.train_sentences :], "synthetic HMM"


class BiLSTMTagger(nn.Module):
    """Embedding, one bidirectional LSTM layer and a linear layer: tag logits ``[B, T, K]``."""

    def __init__(self, vocab_size: int, num_tags: int, dim: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab_size, dim)
        self.lstm = nn.LSTM(dim, dim, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * dim, num_tags)

    def forward(self, words: Tensor, mask: Tensor) -> Tensor:
        lengths = mask.sum(1).cpu()  # pack_padded_sequence wants lengths on the CPU
        packed = nn.utils.rnn.pack_padded_sequence(
            self.embed(words), lengths, batch_first=True, enforce_sorted=False
        )
        hidden, _ = self.lstm(packed)
        hidden, _ = nn.utils.rnn.pad_packed_sequence(
            hidden, batch_first=True, total_length=words.shape[1]
        )
        return self.out(hidden)


class TaggerModule(LightningModule):
    """A tagger whose validation step returns per-token probabilities for the monitor."""

    def __init__(self, model: str, vocab_size: int, num_tags: int, lr: float) -> None:
        super().__init__()
        self.save_hyperparameters()
        if model == "crf":
            self.tagger: nn.Module = CRFTagger(num_tags, vocab_size)
        elif model == "bilstm":
            self.tagger = BiLSTMTagger(vocab_size, num_tags)
        else:
            raise ValueError(f"model must be 'crf' or 'bilstm', got {model!r}")
        self.kind = model
        self.lr = lr

    def probs_and_loss(self, words: Tensor, tags: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        n_tokens = mask.sum()
        if self.kind == "crf":
            loss = self.tagger.negative_log_likelihood(words, tags, mask).sum() / n_tokens
            probs = self.tagger(words, mask)  # posterior marginals P(y_t | x)
        else:
            logits = self.tagger(words, mask)
            loss = F.cross_entropy(logits[mask], tags[mask])
            probs = logits.softmax(-1)
        return probs, loss

    def training_step(self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int) -> Tensor:
        words, tags, mask = batch
        if self.kind == "crf":
            loss = self.tagger.negative_log_likelihood(words, tags, mask).sum() / mask.sum()
        else:
            loss = F.cross_entropy(self.tagger(words, mask)[mask], tags[mask])
        self.log("train/loss", loss, prog_bar=True, batch_size=words.shape[0])
        return loss

    def validation_step(
        self, batch: tuple[Tensor, Tensor, Tensor], batch_idx: int
    ) -> dict[str, Tensor]:
        words, tags, mask = batch
        probs, loss = self.probs_and_loss(words, tags, mask)
        correct = (probs.argmax(-1) == tags)[mask].float().mean()
        n = int(mask.sum())
        self.log("val/loss", loss, batch_size=n)
        self.log("val/acc", correct, prog_bar=True, batch_size=n)
        return {"probs": probs, "target": tags.masked_fill(~mask, PAD)}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def make_loader(
    sentences: Sequence[TaggedSentence],
    words: Vocabulary,
    tags: Vocabulary,
    batch_size: int,
    shuffle: bool,
) -> DataLoader:
    def collate(batch: list[TaggedSentence]) -> tuple[Tensor, Tensor, Tensor]:
        return encode_batch(batch, words, tags)

    return DataLoader(list(sentences), batch_size=batch_size, shuffle=shuffle, collate_fn=collate)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help="UD English-EWT folder (default: auto)")
    parser.add_argument("--synthetic", action="store_true", help="use an HMM-generated corpus")
    parser.add_argument("--model", choices=("crf", "bilstm"), default="crf")
    parser.add_argument("--column", choices=("xpos", "upos"), default="xpos")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--train-sentences", type=int, default=3000)
    parser.add_argument("--dev-sentences", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=None, help="default: 0.05 crf, 0.005 bilstm")
    parser.add_argument(
        "--bin-size",
        type=lambda text: text if text == "auto" else int(text),
        default="auto",
        help="adaptive bin size β, or 'auto' (about √N bins of √N pairs; the default)",
    )
    parser.add_argument("--out", default="runs/tagger", help="TensorBoard log folder")
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU threads (a small tagger runs fastest on one)"
    )
    parser.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    for name in ("epochs", "train_sentences", "dev_sentences", "batch_size", "bin_size", "threads"):
        if getattr(args, name) != "auto" and getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be >= 1")
    # Several threads on a tagger this small mostly wait for each other, and on a busy
    # machine they fight other processes for cores: one thread is many times faster.
    torch.set_num_threads(args.threads)
    seed_everything(args.seed, verbose=False)
    train, dev, source = load_corpus(args)
    word_vocab = Vocabulary.build((w for w, _ in train), min_count=2)
    tag_vocab = Vocabulary.build((t for _, t in train + dev), unknown=False)
    lr = args.lr if args.lr is not None else (0.05 if args.model == "crf" else 0.005)
    print(
        f"{source}: {len(train)} train / {len(dev)} dev sentences, "
        f"{len(word_vocab)} words, {len(tag_vocab)} tags; model {args.model}",
        file=sys.stderr,
    )

    module = TaggerModule(args.model, len(word_vocab), len(tag_vocab), lr)
    logger = TensorBoardLogger(args.out, name=f"{args.model}")
    monitor = CalibrationMonitor(  # the one line that adds calibration to the run
        num_classes=len(tag_vocab),
        ignore_index=PAD,
        bin_size=args.bin_size,
        per_class=True,
        class_names=tag_vocab.itos,
    )
    trainer = Trainer(
        max_epochs=args.epochs,
        accelerator=args.accelerator,
        devices=1,
        logger=logger,
        callbacks=[monitor],
        enable_checkpointing=False,
        log_every_n_steps=10,
        num_sanity_val_steps=1,
    )
    begin = time.perf_counter()
    trainer.fit(
        module,
        make_loader(train, word_vocab, tag_vocab, args.batch_size, shuffle=True),
        make_loader(dev, word_vocab, tag_vocab, 4 * args.batch_size, shuffle=False),
    )
    seconds = time.perf_counter() - begin
    print("\n| epoch | step | val acc | CalibErr [95% interval] |")
    print("|---:|---:|---:|---|")
    for record in monitor.history:
        print(
            f"| {record['epoch']} | {record['step']} | "
            f"{accuracy_at(logger, record['step']):.4f} | {record['error']:.4f} "
            f"[{record['lower']:.4f}, {record['upper']:.4f}] |"
        )
    last = monitor.history[-1]
    print(
        f"\n{args.epochs} epochs in {seconds:.0f} s; logs in {logger.log_dir}\n"
        f"watch them: tensorboard --logdir {args.out}"
    )
    return {"history": monitor.history, "log_dir": logger.log_dir, "last": last}


def accuracy_at(logger: TensorBoardLogger, step: int) -> float:
    """``val/acc`` at ``step``, read back from the run's event file (NaN if absent)."""
    from tensorboard.backend.event_processing.event_accumulator import (
        SCALARS,
        EventAccumulator,
    )

    acc = EventAccumulator(logger.log_dir, size_guidance={SCALARS: 0})
    acc.Reload()
    if "val/acc" not in acc.Tags()["scalars"]:
        return float("nan")
    values = {e.step: e.value for e in acc.Scalars("val/acc")}
    return values.get(step, float("nan"))


if __name__ == "__main__":
    main()
