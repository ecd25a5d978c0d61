"""Hashed surface features for antecedent ranking (Durrett & Klein 2013, "SURFACE").

Every mention gets a few categorical attributes once (mention type, head word, first
word, whole string, number, gender, person, definiteness, position); every feature is
a conjunction of such attributes for the anaphor ``i`` and a candidate antecedent
``j < i`` (or for ``i`` alone, for the NEW action), hashed into ``2**n_bits`` buckets.
Words are hashed with :func:`zlib.crc32` and attributes are combined with fixed
integer arithmetic, so feature ids are identical in every process (Python's salted
``hash()`` is never used).

Pair features (each conjoined with the anaphor's mention type):
  type pair; exact string match (lowercased) x type pair; head match x type pair;
  mention-distance bucket; sentence-distance bucket; head match x sentence distance;
  number, gender and person agreement x type pair (``unknown`` when either side has no
  value: nominal and name mentions carry number only from FEATS/XPOS, gender only for
  pronouns); span overlap (nested mentions); antecedent head word; antecedent first
  word; for pronominal anaphors the pronoun x antecedent type/pronoun, and pronoun x
  sentence distance.
NEW features (each conjoined with the mention type): bias; head word; first word;
  definiteness; first-mention-ness (no earlier mention with the same head / the same
  string anywhere earlier in the document); length bucket.

Mention types come from the head word's tags: ``PRP``/``PRP$`` (or a personal pronoun
tagged ``PRON``) is a pronoun, ``NNP``/``NNPS``/``PROPN`` a name, anything else nominal.
Without tags (LitBank) a head in the pronoun lexicon is a pronoun and a capitalised head
that does not open the sentence is a name.
"""

from __future__ import annotations

import zlib

import torch
from torch import Tensor

from calib_metrics.models.coref_ranker import AntecedentRanker, DocumentFeatures
from calib_metrics.paper.coref_conllu import Document

__all__ = [
    "DISTANCE_BUCKETS",
    "DocumentFeatures",
    "distance_bucket",
    "extract_features",
    "features_for",
    "mention_type",
    "stable_hash",
]

PRONOUN, NAME, NOMINAL = 0, 1, 2
TYPE_NAMES = ("pronoun", "name", "nominal")

# Upper edges (inclusive) of the distance buckets 0,1,2,3,4,5-7,8-15,16-31,32+.
DISTANCE_BUCKETS = (0, 1, 2, 3, 4, 7, 15, 31)

# Personal pronouns: (canonical form, number, gender, person); number 1 sg / 2 pl / 0 ?,
# gender 1 masc / 2 fem / 3 neut / 0 ?, person 1-3.
_PRONOUNS: dict[str, tuple[str, int, int, int]] = {}
for _forms, _attrs in (
    ("i me my mine myself", ("i", 1, 0, 1)),
    ("we us our ours ourselves", ("we", 2, 0, 1)),
    ("you your yours yourself yourselves ya y'all", ("you", 0, 0, 2)),
    ("he him his himself", ("he", 1, 1, 3)),
    ("she her hers herself", ("she", 1, 2, 3)),
    ("it its itself", ("it", 1, 3, 3)),
    ("they them their theirs themselves themself", ("they", 2, 0, 3)),
    ("thee thou thy thine thyself", ("you", 1, 0, 2)),
):
    for _form in _forms.split():
        _PRONOUNS[_form] = _attrs
_DEFINITE = {"the", "this", "that", "these", "those", "my", "your", "his", "her", "its", "our"}
_DEFINITE |= {"their"}
_INDEFINITE = {"a", "an", "some", "any", "no", "every", "each", "another", "many", "several"}

_MIX = 0x5851F42D4C957F2D  # odd 63-bit multiplier (PCG's), fits a signed int64


def stable_hash(text: str) -> int:
    """A process-independent 32-bit hash of a string (CRC-32 of its UTF-8 bytes).

    Example:
        >>> stable_hash("the")
        1011183078
    """
    return zlib.crc32(text.encode("utf-8"))


def distance_bucket(distance: Tensor) -> Tensor:
    """Bucket index of non-negative distances: 0,1,2,3,4,5-7,8-15,16-31,32+ -> 0..8.

    Example:
        >>> distance_bucket(torch.tensor([0, 4, 5, 7, 8, 31, 32, 500]))
        tensor([0, 4, 5, 5, 6, 7, 8, 8])
    """
    edges = torch.tensor(DISTANCE_BUCKETS, device=distance.device, dtype=distance.dtype)
    return torch.bucketize(distance, edges)


def _combine(template: int, *values: Tensor, n_bits: int) -> Tensor:
    """Hash a template id and integer attribute tensors (broadcast) into ``[0, 2**n_bits)``."""
    h = torch.full((), template + 1, dtype=torch.int64, device=values[0].device)
    for value in values:
        # int64 products wrap around, which is deterministic; xor-shift spreads high bits.
        h = (h * _MIX) ^ value.to(torch.int64)
        h = h ^ (h >> 31)
    return h & ((1 << n_bits) - 1)


def mention_type(upos: str | None, xpos: str | None, word: str, sentence_initial: bool) -> int:
    """0 pronoun, 1 name, 2 nominal, from the head word's tags (or its shape without tags).

    Example:
        >>> mention_type("PRON", "PRP", "he", True), mention_type("PROPN", "NNP", "Kim", False)
        (0, 1)
        >>> mention_type(None, None, "London", False), mention_type(None, None, "house", False)
        (1, 2)
    """
    lower = word.lower()
    if xpos is not None or upos is not None:
        if xpos in ("PRP", "PRP$") or (upos == "PRON" and lower in _PRONOUNS):
            return PRONOUN
        if xpos in ("NNP", "NNPS") or upos == "PROPN":
            return NAME
        return NOMINAL
    if lower in _PRONOUNS:
        return PRONOUN
    if word[:1].isupper() and not sentence_initial:
        return NAME
    return NOMINAL


def _number(tok: dict, lower: str) -> int:
    if lower in _PRONOUNS:
        return _PRONOUNS[lower][1]
    feats = tok.get("feats") or {}
    if feats.get("Number") == "Sing":
        return 1
    if feats.get("Number") == "Plur":
        return 2
    xpos = tok.get("xpos")
    if xpos in ("NNS", "NNPS"):
        return 2
    if xpos in ("NN", "NNP"):
        return 1
    return 0


def _attributes(doc: Document) -> dict[str, Tensor]:
    keys = "type head first string sent start end number gender person definite pron"
    keys += " first_head first_string length"
    rows: dict[str, list[int]] = {k: [] for k in keys.split()}
    seen_heads: set[str] = set()
    seen_strings: set[str] = set()
    for m in doc.mentions:
        sent = doc.sentences[m.sentence]
        head_tok = sent[m.head]
        words = [str(sent[k]["form"]) for k in range(m.start, m.end)]
        head = str(head_tok["form"])
        lower_head = head.lower()
        string = " ".join(words).lower()
        mtype = mention_type(head_tok.get("upos"), head_tok.get("xpos"), head, m.head == 0)
        pron = _PRONOUNS.get(lower_head) if mtype == PRONOUN else None
        first = words[0].lower()
        if mtype == PRONOUN:
            definite = 0
        elif mtype == NAME:
            definite = 1
        elif first in _DEFINITE or any(w.lower() in ("'s", "’s") for w in words):
            definite = 2
        elif first in _INDEFINITE:
            definite = 3
        else:
            definite = 4
        rows["type"].append(mtype)
        rows["head"].append(stable_hash(lower_head))
        rows["first"].append(stable_hash(first))
        rows["string"].append(stable_hash(string))
        rows["sent"].append(m.sentence)
        rows["start"].append(m.start)
        rows["end"].append(m.end)
        rows["number"].append(_number(head_tok, lower_head))
        rows["gender"].append(pron[2] if pron else 0)
        rows["person"].append(pron[3] if pron else (3 if mtype != PRONOUN else 0))
        rows["definite"].append(definite)
        rows["pron"].append(stable_hash(pron[0]) if pron else stable_hash(lower_head) + 7)
        rows["first_head"].append(int(lower_head not in seen_heads))
        rows["first_string"].append(int(string not in seen_strings))
        rows["length"].append(min(len(words), 6))
        seen_heads.add(lower_head)
        seen_strings.add(string)
    return {k: torch.tensor(v, dtype=torch.long) for k, v in rows.items()}


def _agreement(a: Tensor, b: Tensor) -> Tensor:
    """0 unknown (either side 0), 1 agree, 2 disagree."""
    return torch.where((a == 0) | (b == 0), 0, torch.where(a == b, 1, 2))


def _window_pairs(n: int, max_distance: int) -> tuple[Tensor, Tensor]:
    """Pairs in the window, anaphor-major: i = 1..N-1, j = i-1 down to i-max_distance."""
    idx = torch.arange(n)
    offsets = torch.arange(1, max_distance + 1)
    ii = idx[:, None].expand(n, max_distance)
    jj = ii - offsets[None, :]
    keep = jj >= 0
    return ii[keep], jj[keep]


def _pair_features(a: dict[str, Tensor], pi: Tensor, pj: Tensor, n_bits: int) -> list[Tensor]:
    """The hashed pair templates (anaphor ``pi``, candidate ``pj``), one tensor each."""
    bits = {"n_bits": n_bits}
    ti, tj = a["type"][pi], a["type"][pj]
    exact = (a["string"][pi] == a["string"][pj]).long()
    head = (a["head"][pi] == a["head"][pj]).long()
    dist = distance_bucket(pi - pj)
    sdist = distance_bucket(a["sent"][pi] - a["sent"][pj])
    same_sent = a["sent"][pi] == a["sent"][pj]
    overlap = (same_sent & (a["start"][pi] < a["end"][pj]) & (a["start"][pj] < a["end"][pi])).long()
    is_pron = ti == PRONOUN
    # pronoun anaphors see the antecedent's pronoun (or, for non-pronouns, its type)
    ante = torch.where(tj == PRONOUN, a["pron"][pj], tj)
    anaphor_pron = torch.where(is_pron, a["pron"][pi], -1)
    pair = [
        _combine(1, ti, tj, **bits),
        _combine(2, ti, tj, exact, **bits),
        _combine(3, ti, tj, head, **bits),
        _combine(4, ti, dist, **bits),
        _combine(5, ti, sdist, **bits),
        _combine(6, ti, head, sdist, **bits),
        _combine(7, ti, tj, _agreement(a["number"][pi], a["number"][pj]), **bits),
        _combine(8, ti, tj, _agreement(a["gender"][pi], a["gender"][pj]), **bits),
        _combine(9, ti, tj, _agreement(a["person"][pi], a["person"][pj]), **bits),
        _combine(10, ti, overlap, **bits),
        _combine(11, ti, a["head"][pj], **bits),
        _combine(12, ti, a["first"][pj], **bits),
        # pronoun-only templates; for other anaphors they fall back to a shared constant
        _combine(13, anaphor_pron, torch.where(is_pron, ante, -1), **bits),
        _combine(14, anaphor_pron, torch.where(is_pron, sdist, -1), **bits),
    ]
    return pair


def _new_features(a: dict[str, Tensor], n_bits: int) -> list[Tensor]:
    """The hashed NEW templates of every mention, one tensor each."""
    bits = {"n_bits": n_bits}
    t = a["type"]
    new = [
        _combine(101, t, **bits),
        _combine(102, t, a["head"], **bits),
        _combine(103, t, a["first"], **bits),
        _combine(104, t, a["definite"], **bits),
        _combine(105, t, a["first_head"], **bits),
        _combine(106, t, a["first_string"], **bits),
        _combine(107, t, a["length"], **bits),
    ]
    return new


def extract_features(doc: Document, n_bits: int = 20, max_distance: int = 100) -> DocumentFeatures:
    """Hash the pair and NEW features of every mention of ``doc`` (its gold mentions).

    Only antecedents at most ``max_distance`` mentions back are scored, which bounds the
    cost at ``O(N * max_distance)``; farther pairs can still corefer through a chain.

    Example:
        >>> import io
        >>> from calib_metrics.paper.coref_conllu import read_coref_documents
        >>> doc = read_coref_documents(io.StringIO(
        ...     "# newdoc id = d\\n"
        ...     "1\\tKim\\tKim\\tPROPN\\tNNP\\t_\\t2\\tnsubj\\t_\\tEntity=(1)\\n"
        ...     "2\\tsaw\\tsee\\tVERB\\tVBD\\t_\\t0\\troot\\t_\\t_\\n"
        ...     "3\\thim\\the\\tPRON\\tPRP\\t_\\t2\\tobj\\t_\\tEntity=(2)\\n\\n")).pop()
        >>> f = extract_features(doc, n_bits=16)
        >>> f.n, f.pair_i.tolist(), f.pair_j.tolist(), f.new_feats.shape[0]
        (2, [1], [0], 2)
        >>> bool((f.pair_feats < 2**16).all())
        True
    """
    if not isinstance(n_bits, int) or not 4 <= n_bits <= 30:
        raise ValueError(f"n_bits must be an int in [4, 30], got {n_bits!r}")
    if not isinstance(max_distance, int) or max_distance < 1:
        raise ValueError(f"max_distance must be a positive int, got {max_distance!r}")
    n = len(doc.mentions)
    entity_index: dict[str, int] = {}
    entity = torch.tensor(
        [
            entity_index.setdefault(m.entity, len(entity_index)) if m.entity else -1
            for m in doc.mentions
        ],
        dtype=torch.long,
    )
    if n == 0:
        empty = torch.zeros((0,), dtype=torch.long)
        no_feats = torch.zeros((0, 0), dtype=torch.int32)
        return DocumentFeatures(0, empty, empty, no_feats, no_feats, entity, max_distance)
    a = _attributes(doc)
    pi, pj = _window_pairs(n, max_distance)
    pair = _pair_features(a, pi, pj, n_bits)
    new = _new_features(a, n_bits)
    return DocumentFeatures(
        n=n,
        pair_i=pi,
        pair_j=pj,
        # int32 halves the memory of a corpus' features; ids are < 2**30
        pair_feats=torch.stack(pair, -1).int(),
        new_feats=torch.stack(new, -1).int(),
        entity=entity,
        max_distance=max_distance,
    )


def features_for(model: AntecedentRanker, doc: Document) -> DocumentFeatures:
    """The features of ``doc`` with ``model``'s hash size and antecedent window.

    Example:
        >>> import io
        >>> from calib_metrics.paper.coref_conllu import read_coref_documents
        >>> doc = read_coref_documents(io.StringIO(
        ...     "1\\tIt\\tit\\tPRON\\tPRP\\t_\\t0\\troot\\t_\\tEntity=(1)\\n"
        ...     "2\\tit\\tit\\tPRON\\tPRP\\t_\\t1\\tobj\\t_\\tEntity=(1)\\n\\n"))[0]
        >>> ll, count = AntecedentRanker(n_bits=8).gold_log_likelihood(
        ...     features_for(AntecedentRanker(n_bits=8), doc))
        >>> round(ll.item(), 4), count
        (-0.6931, 2)
    """
    return extract_features(doc, n_bits=model.n_bits, max_distance=model.max_distance)
