"""Train a POS tagger with Lightning and watch its calibration in TensorBoard every epoch.

The tagger emits per-token tag probabilities: the CRF's posterior marginals
(``--model crf``, :class:`calib_metrics.models.crf.CRFTagger` trained by minibatch Adam
on its negative log-likelihood) or a BiLSTM's softmax (``--model bilstm``). One line adds
:class:`calib_metrics.callbacks.CalibrationMonitor` to the Trainer; it logs the
reliability diagram, the per-tag errors and the calibration error with its 95% interval
at every validation epoch.

With ``--recalibrate`` (BiLSTM only: its probabilities are a softmax of logits) a second
callback, :class:`calib_metrics.callbacks.TemperatureRecalibration`, fits a temperature on
the dev logits when fitting ends; the script then tags a held-out test set and prints test
CalibErr before -> after (one-vs-rest tag queries, intervals over sentences), the paired
interval of the difference (:func:`calib_metrics.recalibration.compare_before_after`),
accuracy and NLL (and writes the reliability diagrams before / after to ``--out``).

Run (UD English-EWT from ``../shared/data``, or ``--data DIR``; ``--synthetic`` for an
HMM-generated corpus that needs no download)::

    python examples/train_tagger_lightning.py --epochs 4
    python examples/train_tagger_lightning.py --synthetic --model bilstm
    python examples/train_tagger_lightning.py --model bilstm --recalibrate
    tensorboard --logdir runs/tagger
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from lightning.pytorch import LightningModule, Trainer, seed_everything
from lightning.pytorch.accelerators import AcceleratorRegistry
from lightning.pytorch.loggers import TensorBoardLogger
from torch import Tensor, nn
from torch.utils.data import DataLoader

from calib_metrics.callbacks import CalibrationMonitor, TemperatureRecalibration
from calib_metrics.models.crf import CRFTagger
from calib_metrics.paper import recalibrate as recal_report
from calib_metrics.paper.chain_eval import keep_known_tags
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


def load_corpus(
    args: argparse.Namespace,
) -> tuple[list[TaggedSentence], list[TaggedSentence], list[TaggedSentence], str]:
    """(train, dev, test, description) from UD English-EWT, or from the synthetic HMM."""
    if not args.synthetic:
        try:
            folder = find_dataset("ud-english-ewt", args.data)
        except FileNotFoundError as err:
            if args.data is not None:
                raise
            print(f"{err}; using synthetic data (--synthetic)", file=sys.stderr)
        else:
            splits = [
                read_tagged_sentences(folder / f"en_ewt-ud-{name}.conllu.gz", args.column, limit=n)
                for name, n in (
                    ("train", args.train_sentences),
                    ("dev", args.dev_sentences),
                    ("test", args.test_sentences),
                )
            ]
            return (*splits, f"UD English-EWT {args.column} ({folder})")
    sizes = (args.train_sentences, args.dev_sentences, args.test_sentences)
    corpus = synthetic_corpus(sum(sizes), seed=args.seed)
    train, dev = corpus[: sizes[0]], corpus[sizes[0] : sizes[0] + sizes[1]]
    return train, dev, corpus[sizes[0] + sizes[1] :], "synthetic HMM"


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

    def probs_and_loss(
        self, words: Tensor, tags: Tensor, mask: Tensor
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """Per-token probabilities, the loss, and the logits (None for the CRF)."""
        n_tokens = mask.sum()
        if self.kind == "crf":
            loss = self.tagger.negative_log_likelihood(words, tags, mask).sum() / n_tokens
            return self.tagger(words, mask), loss, None  # posterior marginals P(y_t | x)
        logits = self.tagger(words, mask)
        loss = F.cross_entropy(logits[mask], tags[mask])
        return logits.softmax(-1), loss, logits

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
        probs, loss, logits = self.probs_and_loss(words, tags, mask)
        correct = (probs.argmax(-1) == tags)[mask].float().mean()
        n = int(mask.sum())
        self.log("val/loss", loss, batch_size=n)
        self.log("val/acc", correct, prog_bar=True, batch_size=n)
        out = {"probs": probs, "target": tags.masked_fill(~mask, PAD)}
        return out if logits is None else out | {"logits": logits}

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


def accelerator_problem(name: str) -> str | None:
    """Why the Trainer cannot run on the accelerator ``name`` here, or None when it can:
    asked of Lightning's accelerator registry, which is what the Trainer reads.

    Example:
        >>> accelerator_problem("cpu") is None, accelerator_problem("auto") is None
        (True, True)
        >>> accelerator_problem("abacus")
        'unknown accelerator (choose from auto, gpu, cpu, ...)'
    """
    if name == "auto":  # Lightning picks one the machine has
        return None
    known = sorted(AcceleratorRegistry.available_accelerators())
    # "gpu" is Lightning's name for whichever of CUDA and MPS the machine has.
    wanted = ["cuda", "mps"] if name == "gpu" else [name]
    if not set(wanted) & set(known):
        return f"unknown accelerator (choose from auto, gpu, {', '.join(known)})"
    available = [n for n in known if AcceleratorRegistry[n]["accelerator"].is_available()]
    if not set(wanted) & set(available):
        return f"not available on this machine (available: auto, {', '.join(available)})"
    return None


def bin_size(text: str) -> int | str:
    """``--bin-size``: a whole number of pairs, or ``auto`` (argparse names this function
    in its error: "invalid bin_size value")."""
    return text if text == "auto" else int(text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=None, help="UD English-EWT folder (default: auto)")
    parser.add_argument("--synthetic", action="store_true", help="use an HMM-generated corpus")
    parser.add_argument("--model", choices=("crf", "bilstm"), default="crf")
    parser.add_argument("--column", choices=("xpos", "upos"), default="xpos")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--train-sentences", type=int, default=3000)
    parser.add_argument("--dev-sentences", type=int, default=1000)
    parser.add_argument("--test-sentences", type=int, default=1000, help="for --recalibrate")
    parser.add_argument(
        "--recalibrate",
        action="store_true",
        help="BiLSTM: fit a temperature on dev at the end of fitting, report test before/after",
    )
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=None, help="default: 0.05 crf, 0.005 bilstm")
    parser.add_argument(
        "--bin-size",
        type=bin_size,
        default="auto",
        help="adaptive bin size β, or 'auto' (about √N bins of √N pairs; the default)",
    )
    parser.add_argument("--out", default="runs/tagger", help="TensorBoard log folder")
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument(
        "--threads", type=int, default=1, help="CPU threads (a small tagger runs fastest on one)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-samples", type=int, default=1000, help="bootstrap draws (test)")
    return parser


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = build_parser()
    args = parser.parse_args(argv)
    sizes = (
        "epochs",
        "train_sentences",
        "dev_sentences",
        "test_sentences",
        "batch_size",
        "n_samples",
    )
    for name in (*sizes, "bin_size", "threads"):
        if getattr(args, name) != "auto" and getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    if args.lr is not None and not (math.isfinite(args.lr) and args.lr > 0):
        parser.error(f"--lr must be a finite number > 0, got {args.lr}")
    if args.recalibrate and args.model != "bilstm":
        parser.error("--recalibrate needs --model bilstm (a temperature rescales logits)")
    # Before the corpus loads: an accelerator this machine lacks is a one-line error, not
    # a traceback from the Trainer after minutes of reading.
    problem = accelerator_problem(args.accelerator)
    if problem is not None:
        parser.error(f"--accelerator {args.accelerator}: {problem}")
    # Several threads on a tagger this small mostly wait for each other, and on a busy
    # machine they fight other processes for cores: one thread is many times faster.
    torch.set_num_threads(args.threads)
    seed_everything(args.seed, verbose=False)
    try:
        train, dev, test, source = load_corpus(args)
    except FileNotFoundError as err:  # --data names a folder without the corpus
        parser.error(str(err))
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
    # Fits T on the last validation epoch's logits when fitting ends.
    recalibration = [TemperatureRecalibration(ignore_index=PAD)] if args.recalibrate else []
    trainer = Trainer(
        max_epochs=args.epochs,
        accelerator=args.accelerator,
        devices=1,
        logger=logger,
        callbacks=[monitor, *recalibration],
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
    out = {"history": monitor.history, "log_dir": logger.log_dir, "last": last}
    if args.recalibrate:
        test, dropped = keep_known_tags(test, tag_vocab)
        batch = encode_batch(test, word_vocab, tag_vocab)
        out["recalibration"] = recalibration_report(module, batch, args)
        print(f"\ntest: {len(test)} sentences ({dropped} with tags unseen in train/dev dropped)")
        print(recal_report.markdown([out["recalibration"]]))
        print(f"wrote {Path(args.out) / out['recalibration']['figure']}")
    return out


def recalibration_report(module: TaggerModule, batch: tuple[Tensor, Tensor, Tensor], args) -> dict:
    """Test CalibErr, accuracy and NLL before and after the dev temperature; diagrams.

    Queries are one-vs-rest ("token t has tag k", every test token and tag); intervals
    resample whole sentences, the paired interval of the difference too.
    """
    words, tags, mask = batch
    module.eval()
    with torch.no_grad():
        logits = module.tagger(words, mask)[mask].double()  # [N, K]
    gold = tags[mask]
    temperature = module.calibration_temperature
    before, after = logits.softmax(-1), (logits / temperature).softmax(-1)
    onehot = F.one_hot(gold, logits.shape[-1]).double()
    sentence = torch.arange(len(mask))[:, None].expand_as(mask)[mask]
    groups = sentence[:, None].expand_as(onehot).reshape(-1)

    def nll(probs: Tensor) -> float:
        return float(-probs.gather(1, gold[:, None]).clamp_min(1e-300).log().mean())

    accuracy = float((logits.argmax(-1) == gold).double().mean())  # T > 0 keeps the argmax
    record, curves = recal_report.row(
        "BiLSTM tagger (softmax)", f"temperature (T = {temperature:.3f})", "dev NLL (callback)",
        before.reshape(-1), after.reshape(-1), onehot.reshape(-1), groups=groups,
        accuracy=(accuracy, accuracy), nll=(nll(before), nll(after)),
        n_samples=args.n_samples, seed=args.seed,
    )  # fmt: skip
    # The intervals resample sentences: the figure says so (it had named the pair bootstrap).
    record["figure"] = recal_report.figure(
        {"BiLSTM": curves}, Path(args.out) / "bilstm_recalibration.png", interval="groups"
    )
    return record


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
