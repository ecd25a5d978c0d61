"""Country lexicon w(c) for the event analysis, read from TABARI/CAMEO ``.actors`` files.

The paper (appendix, part 3) matches words against ``country_igos.txt``: each
country's names and adjective forms, case-insensitively, with a light stemming
back-off (strip the last one, then two characters when a word is not found).
That file has no license, so the lexicon is built from the MIT-licensed
Phoenix/PETRARCH2 dictionaries (``shared/data/phoenix-country-actors``), which
hold the same names (96% of country_igos' lines appear verbatim).

What is taken from the TABARI file and why:

* **Countries.** An actor block whose code is a bare three-letter code
  (``AFGHANISTAN_ [AFG]``, or codes on indented lines such as ``[IRQ <20030320]``)
  is a country; its head name and ``+`` synonyms are its names. When a block
  carries several three-letter codes over time (``LEIPZIG`` is ``DDR`` then
  ``DEU``) the open-ended, most recent one wins. Person and institution blocks
  (codes with role suffixes such as ``USAGOV``) are left out.
* **Names and demonyms, not cities.** Phoenix lists capitals, cities and
  provinces as synonyms (``+BUFFALO_`` under the USA); the paper's lexicon has
  names and adjectives only, and city names collide with person names in
  ordinary text. A synonym is kept when one of its words shares its first three
  letters with a distinctive word of the country's official names (``AFGHAN`` /
  ``AFGHANISTAN``, ``SWISS`` / ``SWITZERLAND``), when all its words are generic
  (``UNITED STATES``), when it is an acronym (``U.S.``, ``DPRK``), or when it is
  one of the few well-known demonyms in :data:`EXTRA_NAMES` (``BRITISH``,
  ``DUTCH``, ``BURMA``). ``cities=True`` keeps every synonym instead.
* **IGOs** (NATO, the UN, the European Union, ...) from the International file:
  organisation entries (acronyms or names with words like ORGANIZATION, UNION,
  COUNCIL) whose code starts with ``IGO`` and has no date range; their code is the
  full CAMEO code (``IGOWSTNAT`` for NATO).
* **Short acronyms** written without dots (``US``, ``UN``, ``UAE``) match only an
  all-uppercase token, because "us" is an English pronoun ("they attacked us").
  The Phoenix files list no ``UK`` and no ``EU`` (only ``U.K.`` and ``European
  Union``), and the lexicon adds none, to stay faithful to them: "UK" is not read
  as Britain, "U.K." is. The stemming back-off only yields stems of at least five
  characters, so "Malik" does not become "Mali" but "Iraqis" becomes "Iraqi".

How the dictionaries' own conventions are read: ``_`` joins the words of one
phrase (``NORTH_KOREA_`` is "north korea", two consecutive tokens) and a trailing
``_`` ends it; a ``+`` line is a synonym of the block's head, with its codes.
TABARI read a word without a trailing ``_`` as a stem (``+INDIAN`` would match
"Indiana"); PETRARCH2, whose dictionaries these are, matches complete words only,
and so does this lexicon: the only partial matching is the paper's back-off. The
files are upper case, so they say nothing about case; in English text, though,
country names, demonyms and capitals are proper nouns and always capitalised, so:

* **A name matches only a capitalised token** (an upper-case letter in the last
  word of the phrase: "France", "FRANCE", "U.S.", "the United States"). The
  lower-case common words "male", "polish", "cork", "guinea" and "pole" are not
  the capital Malé, Poland, the city of Cork, Guinea or a Pole. ``capitalized=False``
  restores the paper's case-insensitive matching (for lower-cased text).
* **The back-off never re-reads another actor's name.** A word that the
  dictionaries list as the name of another actor (a city, province or person the
  lexicon leaves out, such as ``+INDIANA_`` under the USA) is not an inflected
  country name, so "Indiana" is not backed off to "Indian" (India); a dropped
  spelling of the same country ("Filipinas" under the Philippines) still backs off.
  :data:`OTHER_NAMES` adds the few such names the dictionaries lack ("the Americas"
  are two continents, not "America").
* **A longer name of another place is read whole.** A scan takes a listed other
  name of several words as one non-match, so that its last word does not match alone:
  "North America", "Latin American", "New England", "New South Wales" and the
  "Niger-Congo" languages name no country (:data:`OTHER_NAMES`).
* **A hyphen joins a name's words only where they cannot be two names.** UD-style
  tokenisers split hyphenated words ("Timor-Leste" becomes "Timor", "-", "Leste"), so
  the words of a name may be joined by hyphen tokens (:data:`HYPHENS`): "Timor - Leste",
  "HONG - KONG", "South - Africa". A hyphen between two names, though, pairs them: "the
  Serbian-Montenegrin border" lies between Serbia and Montenegro, not in the union
  "Serbia and Montenegro", and "the American-Indian nuclear deal" concerns no "American
  Indian". So where every word of a name is a name by itself, its words joined by
  hyphens are read whole only if the name is written with a hyphen
  (:data:`HYPHENATED_NAMES`: "Guinea-Bissau", "Niger-Congo"); otherwise each word is
  read alone. Only country names and demonyms pair: with ``cities=True`` a capital is a
  name alone too, yet "Congo-Kinshasa" is one country, not Congo and Kinshasa.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from calib_metrics.paper.conllu_io import readable
from calib_metrics.paper.locations import where_to_get

LEXICON = "phoenix-country-actors"
COUNTRIES_FILE = "Phoenix.Countries.actors.txt.gz"
INTERNATIONAL_FILE = "Phoenix.International.actors.txt.gz"

#: Words that say nothing about which country a name belongs to.
GENERIC_WORDS = frozenset(
    [
        "the",
        "of",
        "and",
        "republic",
        "democratic",
        "people's",
        "peoples",
        "people",
        "united",
        "states",
        "state",
        "kingdom",
        "federal",
        "federation",
        "islamic",
        "islands",
        "island",
        "saint",
        "st.",
        "north",
        "south",
        "east",
        "west",
        "northern",
        "southern",
        "eastern",
        "western",
        "central",
        "arab",
        "great",
        "new",
        "union",
        "commonwealth",
        "socialist",
        "principality",
        "grand",
        "duchy",
        "sultanate",
        "emirates",
        "territory",
    ]
)

#: Demonyms and common names that share no prefix with their country's official name.
EXTRA_NAMES: dict[str, tuple[str, ...]] = {
    "GBR": (
        "britain", "british", "briton", "britons", "england", "english", "englishman",
        "scotland", "scottish", "scot", "wales", "welsh",
    ),
    "NLD": ("dutch", "dutchman", "holland"),
    "MMR": ("burma", "burmese"),
    "PHL": ("filipino", "filipina"),
    "CIV": ("ivory coast", "ivorian"),
    "USA": ("america", "american", "americans"),
    "DEU": ("german", "germans"),
    "CHE": ("swiss",),
    "PRK": ("dprk",),
    "FRA": ("french", "frenchman", "frenchmen"),
    "DNK": ("danish", "dane", "danes"),
    "IRL": ("irish", "irishman", "eire"),
    "IRN": ("persia", "persian"),
    "KHM": ("kampuchea",),
    "MDG": ("malagasy",),
    "LKA": ("ceylon",),
    "THA": ("siam",),
    # Phoenix lists "Samoan" under American Samoa only (a US territory).
    "WSM": ("samoan",),
}  # fmt: skip

#: Names of places (and peoples, and a language family) that are not countries, which
#: the dictionaries do not list themselves: the back-off would read "Americas" as
#: "America" (USA), and a word of a longer name would match alone ("North America",
#: "New England", "New South Wales", "American Indian", "Niger Congo"). The regions and
#: peoples are the ones a scan of GUM (2026-11-30) found matched as a country.
OTHER_NAMES: tuple[str, ...] = (
    "americas",
    *(f"{part} america{suffix}" for part in ("north", "south", "latin", "central")
      for suffix in ("", "n", "ns", "n indian", "n indians")),
    "new england", "new mexico", "new mexican", "new south wales", "british columbia",
    "american indian", "american indians", "niger congo",
)  # fmt: skip

#: Names written with a hyphen whose every word is a name by itself (Guinea; Bissau, the
#: capital; Niger and Congo): their words joined by hyphen tokens are read whole, where
#: those of other such names are a pair ("Serbian-Montenegrin", "Soviet-Russian"). The
#: Phoenix files write a hyphen as ``_``, like any word break, so the list is this
#: module's. A name with a word that is no country name or demonym alone ("Timor-Leste",
#: "Hong Kong", and "Congo-Kinshasa" even with ``cities=True``, where Kinshasa matches
#: alone) needs no entry: its words are read whole across hyphens anyway.
HYPHENATED_NAMES: tuple[str, ...] = (
    "guinea-bissau", "guinee-bissau", "guinea-bissauan", "bissau-guinea", "niger-congo",
)  # fmt: skip

_ORG_WORDS = re.compile(
    r"ORGANI[SZ]ATION|UNION|COUNCIL|LEAGUE|ALLIANCE|TREATY|NATIONS|COMMUNITY|ASSEMBLY|"
    r"BANK|FUND|COMMISSION|AGENCY|COURT|TRIBUNAL|SECRETARIAT|PARLIAMENT"
)
_CODE = re.compile(r"\[([^\]\s]+)(?:\s+([^\]]*))?\]")
_COUNTRY_CODE = re.compile(r"^[A-Z]{3}$")
#: Tokens that join the words of a hyphenated name when a tokeniser splits it (UD-style:
#: "Guinea-Bissau" -> "Guinea", "-", "Bissau"): hyphen-minus, hyphen, non-breaking hyphen
#: and the en dash ("Niger–Congo", as Wikipedia writes it).
HYPHENS = frozenset({"-", "\u2010", "\u2011", "\u2013"})
#: What :meth:`CountryLexicon._lookup` returns for another place's name: a non-match
#: that a scan consumes whole.
_OTHER = "other place"


@dataclass
class _Block:
    names: list[str] = field(default_factory=list)
    codes: list[tuple[str, str]] = field(default_factory=list)  # (code, date range or "")


def _read_blocks(path: Path) -> list[_Block]:
    """Actor blocks of a TABARI ``.actors`` file: a head line, ``+`` synonyms, codes."""
    opener = gzip.open if path.suffix == ".gz" else open
    blocks: list[_Block] = []
    current: _Block | None = None
    with (
        readable(path, "lexicon file"),
        opener(path, "rt", encoding="utf-8", errors="replace") as handle,
    ):
        for raw in handle:
            line = raw.split("#", 1)[0].rstrip()
            if not line.strip():
                continue
            codes = [(m.group(1), (m.group(2) or "").strip()) for m in _CODE.finditer(line)]
            name = _CODE.sub("", line).strip()
            if line[0] in " \t":  # an indented line carries codes only
                if current is not None:
                    current.codes += codes
                continue
            if line.startswith("+"):
                if current is not None and name[1:].strip():
                    current.names.append(name[1:].strip())
                    current.codes += codes
                continue
            # A head line without codes whose predecessor has none either is a
            # synonym-less alias in TABARI; a new block starts either way.
            current = _Block([name], codes)
            blocks.append(current)
    return blocks


def _phrase(name: str) -> tuple[str, ...]:
    return tuple(w for w in re.split(r"[_\s]+", name.strip().lower()) if w)


def _is_acronym(words: tuple[str, ...]) -> bool:
    letters = "".join(words).replace(".", "")
    vowels = sum(ch in "aeiou" for ch in letters)
    short = len(letters) <= 3 or (len(letters) <= 5 and vowels <= 1)
    return len(words) == 1 and letters.isalpha() and (short or "." in words[0])


def _country_code(codes: list[tuple[str, str]]) -> str | None:
    bare = [(c, d) for c, d in codes if _COUNTRY_CODE.match(c)]
    if not bare:
        return None
    # Prefer the open-ended code ("" or ">date"), i.e. the country as it is now.
    open_ended = [c for c, d in bare if not d or d.startswith(">")]
    return (open_ended or [bare[-1][0]])[-1]


class CountryLexicon:
    """Country (and IGO) names mapped to codes, matched as the paper's appendix says.

    Args:
        phrases: lower-cased word tuples mapped to a code (``("north", "korea") -> "PRK"``).
        case_sensitive: phrases (short dotless acronyms such as ``("us",)``) that
            match only when every token is upper case.
        min_stem: the shortest stem the back-off may produce.
        capitalized: match a phrase only when its last token has an upper-case
            letter, since names and demonyms are capitalised in English ("male" is
            not the capital Malé). ``False`` matches case-insensitively, as the paper.
        other_names: lower-cased word tuples that name something other than a
            country (a city or province left out of ``phrases``); the back-off never
            turns one of them into a country ("Indiana" is not "Indian").
        hyphenated: phrases and other names written with a hyphen (``("guinea",
            "bissau")``): their words joined by hyphen tokens are read whole even where
            each word is a name by itself, where the hyphen would otherwise pair the
            words' own names.

    Example:
        >>> lex = CountryLexicon({("france",): "FRA", ("french",): "FRA", ("us",): "USA",
        ...                       ("north", "korea"): "PRK"}, case_sensitive={("us",)})
        >>> lex.match("French"), lex.match("Frenchs"), lex.match("us"), lex.match("US")
        ('FRA', 'FRA', None, 'USA')
        >>> lex.match_tokens(["Troops", "of", "North", "Korea", "attacked"])
        [(2, 4, 'PRK')]
        >>> lex = CountryLexicon({("male",): "MDV", ("indian",): "IND"},
        ...                      other_names={("indiana",)})
        >>> lex.match("male"), lex.match("Male"), lex.match("Indians"), lex.match("Indiana")
        (None, 'MDV', 'IND', None)
        >>> lex = CountryLexicon({("guinea",): "GIN", ("bissau",): "GNB", ("serbia",): "SRB",
        ...                       ("montenegro",): "MNE", ("guinea", "bissau"): "GNB",
        ...                       ("serbia", "montenegro"): "SCG"},
        ...                      hyphenated={("guinea", "bissau")})
        >>> lex.match_tokens("Guinea - Bissau and Serbia - Montenegro".split())
        [(0, 3, 'GNB'), (4, 5, 'SRB'), (6, 7, 'MNE')]
    """

    def __init__(
        self,
        phrases: dict[tuple[str, ...], str],
        case_sensitive: set[tuple[str, ...]] | frozenset[tuple[str, ...]] = frozenset(),
        min_stem: int = 5,
        *,
        capitalized: bool = True,
        other_names: set[tuple[str, ...]] | frozenset[tuple[str, ...]] = frozenset(),
        hyphenated: set[tuple[str, ...]] | frozenset[tuple[str, ...]] = frozenset(),
    ) -> None:
        if min_stem < 1:
            raise ValueError(f"min_stem must be >= 1, got {min_stem}")
        self.phrases = dict(phrases)
        self.case_sensitive = frozenset(case_sensitive)
        self.min_stem = min_stem
        self.capitalized = capitalized
        # A phrase of the lexicon is never shadowed by another actor's name.
        self.other_names = frozenset(other_names).difference(self.phrases)
        self.hyphenated = frozenset(hyphenated)
        self.max_len = max((len(p) for p in self.phrases), default=0)
        # Multiword phrases (and other names, read whole) indexed by their first word, so
        # a scan tries only the lengths that can match at a position (the back-off
        # touches the last word).
        lengths: dict[str, set[int]] = {}
        for p in (*self.phrases, *self.other_names):
            if len(p) > 1:
                lengths.setdefault(p[0], set()).add(len(p))
        self._lengths = {w: sorted(ls, reverse=True) for w, ls in lengths.items()}
        self.codes = sorted(set(self.phrases.values()))

    def __len__(self) -> int:
        return len(self.phrases)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike,
        *,
        cities: bool = False,
        igos: bool = True,
        min_stem: int = 5,
        capitalized: bool = True,
    ) -> CountryLexicon:
        """Build the lexicon from a Phoenix folder (or a single ``.actors`` file).

        ``path`` is the folder holding ``Phoenix.Countries.actors.txt.gz`` (and,
        with ``igos=True``, ``Phoenix.International.actors.txt.gz``) or one
        ``.actors[.txt][.gz]`` file. ``cities=True`` keeps city and province synonyms.
        A name the files list for another actor than the country the back-off would
        reach from it (a city, province or person the lexicon leaves out) becomes one
        of its ``other_names``, as do :data:`OTHER_NAMES`; :data:`HYPHENATED_NAMES` are
        its ``hyphenated`` names, and with ``cities=True`` so is every name with a word
        that ``cities=False`` does not match alone (a city: "Congo Kinshasa"), since
        only two countries' names or demonyms pair across a hyphen. ``capitalized`` is
        passed on (see the class).

        Example:
            >>> import tempfile, pathlib
            >>> d = pathlib.Path(tempfile.mkdtemp())
            >>> _ = (d / "x.actors.txt").write_text(
            ...     "FRANCE_ [FRA]\\n+FRENCH_\\n+PARIS_\\nJACQUES_CHIRAC_\\n\\t[FRAGOV]\\n")
            >>> lex = CountryLexicon.load(d / "x.actors.txt")
            >>> lex.match("French"), lex.match("french"), lex.match("Paris"), lex.match("Chirac")
            ('FRA', None, None, None)
        """
        path = Path(path)
        if path.is_dir():
            files = [path / COUNTRIES_FILE]
            if igos and (path / INTERNATIONAL_FILE).exists():
                files.append(path / INTERNATIONAL_FILE)
        else:
            files = [path]
        for f in files:
            if not f.exists():
                raise FileNotFoundError(
                    f"country lexicon file not found: {f}; {where_to_get(LEXICON)}"
                )
        phrases: dict[tuple[str, ...], str] = {}
        # With cities, also the names and demonyms alone (what ``cities=False`` keeps):
        # only these pair across a hyphen.
        names: dict[tuple[str, ...], str] = {} if cities else phrases
        built = [(phrases, True), (names, False)] if cities else [(phrases, False)]
        # Every listed name with the countries of the blocks that list it.
        owners: dict[tuple[str, ...], set[str | None]] = {}
        for f in files:
            # The International file also has bare three-letter codes that are not
            # countries (MED: news media), so only its IGOs are taken.
            countries = not f.name.startswith("Phoenix.International")
            for block in _read_blocks(f):
                for kept, keep_cities in built:
                    found = _block_phrases(
                        block, cities=keep_cities, igos=igos, countries=countries
                    )
                    for words, code in found:
                        kept.setdefault(words, code)
                owner = _owner(block.codes)
                for n in block.names:
                    if "(" not in n:
                        owners.setdefault(_phrase(n), set()).add(owner)
        for kept, _ in built:
            for code, extra in EXTRA_NAMES.items():
                if code in set(kept.values()):
                    for name in extra:
                        kept.setdefault(_phrase(name), code)
        if not phrases:
            raise ValueError(f"no country entries found in {path}")
        sensitive = {p for p in phrases if len(p) == 1 and "." not in p[0] and len(p[0]) <= 3}
        options = {"case_sensitive": sensitive, "min_stem": min_stem, "capitalized": capitalized}
        backoff = cls(phrases, **options)._backoff_code
        # A listed name stops the back-off only when it belongs to another actor than
        # the country the back-off reaches: "Indiana" (a US state) is not India, but
        # "Filipinas", a spelling under the Philippines that the city filter drops,
        # still backs off to "filipina" and the Philippines. OTHER_NAMES always stand.
        listed_elsewhere = {
            name for name, listed in owners.items() if backoff(name) not in (None, *listed)
        }
        other = listed_elsewhere | {_phrase(n) for n in OTHER_NAMES}
        hyphenated = {_phrase(n.replace("-", " ")) for n in HYPHENATED_NAMES}
        if cities:
            # A city is a name alone here, but a hyphen pairs two countries' names only:
            # "Congo-Kinshasa" is one country, as in the lexicon without cities, so a name
            # with a word that is no country name or demonym alone is read whole.
            alone = cls(names, min_stem=min_stem, capitalized=False, other_names=other)
            hyphenated |= {p for p in (*phrases, *other) if not all(alone.match(w) for w in p)}
        return cls(phrases, **options, other_names=other, hyphenated=hyphenated)

    def _variants(self, word: str) -> list[str]:
        lower = word.lower()
        out = [lower]
        for k in (1, 2):
            if len(lower) - k >= self.min_stem:
                out.append(lower[:-k])
        return out

    def _backoff_code(self, words: tuple[str, ...]) -> str | None:
        """The code that only the back-off reaches from lower-cased ``words``."""
        for last in self._variants(words[-1])[1:]:
            code = self.phrases.get((*words[:-1], last))
            if code is not None:
                return code
        return None

    def _lookup(self, tokens: Sequence[str], hyphens: bool = False) -> str | None:
        """The code ``tokens`` name, :data:`_OTHER` for another place's name, or None.

        ``hyphens``: the tokens were joined by hyphen tokens in the text. Then a name
        whose every word is a name by itself is read only if it is written with a hyphen
        (:attr:`hyphenated`); otherwise the hyphen pairs the words' own names.
        """
        if self.capitalized and not any(ch.isupper() for ch in tokens[-1]):
            return None
        # Words joined by hyphens that are each a name are a pair of names ("Serbia -
        # Montenegro relations"), unless the name is written with a hyphen.
        pair = hyphens and all(self.match(t) is not None for t in tokens)
        head = tuple(t.lower() for t in tokens[:-1])
        # A longer name is one only when every word is capitalised: "a new England
        # manager" is England's, "New England" is not.
        whole = not self.capitalized or all(any(ch.isupper() for ch in t) for t in tokens)
        for last in self._variants(tokens[-1]):
            key = (*head, last)
            if pair and key not in self.hyphenated:
                continue
            if key in self.other_names and (len(key) == 1 or whole):
                # A name in its own right, or its inflection ("Indianas"): the back-off
                # must not read it as an inflected country name.
                return _OTHER
            code = self.phrases.get(key)
            if code is None:
                continue
            if key in self.case_sensitive and not all(t.isupper() for t in tokens):
                continue
            return code
        return None

    def match(self, word: str) -> str | None:
        """The code of a single word (with the stemming back-off), or ``None``."""
        code = self._lookup([word]) if word else None
        return None if code is _OTHER else code

    def match_tokens(self, tokens: Sequence[str]) -> list[tuple[int, int, str]]:
        """Greedy longest matches over a token sequence: ``(start, end, code)``, end exclusive.

        The back-off applies to the last word of a phrase ("North Koreans"). Another
        place's name is consumed whole as a non-match, so that none of its words
        matches alone. The words of a phrase may also be joined by hyphen tokens, as
        UD-style tokenisers split hyphenated words (:data:`HYPHENS`), unless every word
        is a name by itself and the phrase is not written with a hyphen: then the hyphen
        pairs two names ("Serbia - Montenegro relations").

        Example:
            >>> lex = CountryLexicon({("america",): "USA"}, other_names={("latin", "america")})
            >>> lex.match_tokens(["Latin", "America", "and", "America"])
            [(3, 4, 'USA')]
            >>> lex.match_tokens(["Latin", "-", "America", "and", "America"])
            [(4, 5, 'USA')]
        """
        found: list[tuple[int, int, str]] = []
        i, n = 0, len(tokens)
        while i < n:
            lengths = [*self._lengths.get(tokens[i].lower(), ()), 1]
            for words, end in _phrase_spans(tokens, i, lengths):
                code = self._lookup(words, hyphens=end - i > len(words))
                if code is not None:
                    if code is not _OTHER:
                        found.append((i, end, code))
                    i = end
                    break
            else:
                i += 1
        return found

    def token_codes(self, tokens: Sequence[str]) -> list[str | None]:
        """The code each token belongs to (through a multiword match), or ``None``.

        Example:
            >>> lex = CountryLexicon({("united", "states"): "USA"})
            >>> lex.token_codes(["the", "United", "States"])
            [None, 'USA', 'USA']
        """
        codes: list[str | None] = [None] * len(tokens)
        for start, end, code in self.match_tokens(tokens):
            codes[start:end] = [code] * (end - start)
        return codes


def _phrase_spans(tokens: Sequence[str], i: int, lengths: Sequence[int]):
    """The words a phrase of each of ``lengths`` (longest first) can be read from at
    ``tokens[i]``, with the end of its span: the words side by side, then, for several
    words, joined by hyphen tokens (the span is then longer than the words). UD-style
    tokenisers split "Niger-Congo" into "Niger", "-", "Congo", which had matched Niger
    and Congo past the other name "niger congo".

    Example:
        >>> [(list(w), end) for w, end in _phrase_spans(["Niger", "-", "Congo"], 0, [2, 1])]
        [(['Niger', '-'], 2), (['Niger', 'Congo'], 3), (['Niger'], 1)]
    """
    n = len(tokens)
    for length in sorted(set(lengths), reverse=True):
        if i + length <= n:
            yield tokens[i : i + length], i + length
        end = i + 2 * length - 1
        if length > 1 and end <= n and all(tokens[k] in HYPHENS for k in range(i + 1, end, 2)):
            yield tokens[i:end:2], end


def _owner(codes: list[tuple[str, str]]) -> str | None:
    """The country a block belongs to: its bare code, else its codes' shared prefix
    (``FRAGOV`` and ``FRAELI``: FRA), else ``None``."""
    country = _country_code(codes)
    if country is not None:
        return country
    prefixes = {c[:3] for c, _ in codes}
    return prefixes.pop() if len(prefixes) == 1 else None


def _block_phrases(block: _Block, *, cities: bool, igos: bool, countries: bool = True):
    """The (phrase, code) pairs a block contributes to the lexicon."""
    country = _country_code(block.codes) if countries else None
    names = [n for n in block.names if "(" not in n and n.strip()]
    if country is not None:
        if cities:
            yield from ((_phrase(n), country) for n in names)
            return
        # The head name is the official one; when it is all generic words
        # ("UNITED_KINGDOM_") the first synonym (the long official form) stands in.
        stems: set[str] = set()
        for name in names[:2]:
            stems |= {w[:3] for w in _phrase(name) if len(w) >= 4 and w not in GENERIC_WORDS}
            if stems:
                break
        for i, name in enumerate(names):
            words = _phrase(name)
            if not words:
                continue
            keep = (
                i == 0
                or all(w in GENERIC_WORDS for w in words)
                or _is_acronym(words)
                or any(len(w) >= 3 and w[:3] in stems for w in words if w not in GENERIC_WORDS)
            )
            if keep:
                yield words, country
        return
    if not igos or not block.codes:
        return
    codes = {c for c, _ in block.codes}
    if len(codes) != 1 or any(d for _, d in block.codes):
        return
    code = codes.pop()
    if not code.startswith("IGO"):
        return
    for name in names:
        words = _phrase(name)
        # organisation acronyms (NATO, UNESCO) are one short word; people have several
        short = len(words) == 1 and len(words[0].replace(".", "")) <= 6
        if words and (short or _ORG_WORDS.search(name.upper())):
            yield words, code
