"""Hand-written CoNLL-U documents (GUM-style ``Entity=`` coreference) for the event tests."""

from __future__ import annotations

import io

from calib_metrics.paper.coref_conllu import read_coref_documents

LEXICON = """\
FRANCE_  [FRA]
+FRENCH_
+PARIS_
IRAQ_  [IRQ]
+IRAQI_
+BAGHDAD_
UNITED_STATES_OF_AMERICA_  [USA]
+AMERICAN_
+US_
+U.S.
+UNITED_STATES_
+CHICAGO_
NORTH_KOREA_  [PRK]
+NORTH_KOREAN
JACQUES_CHIRAC_
\t[FRAGOV]
"""


def sentence(rows: list[tuple]) -> str:
    """Rows ``(form, lemma, upos, head, deprel[, misc[, feats]])`` -> CoNLL-U lines."""
    lines = []
    for k, row in enumerate(rows, 1):
        form, lemma, upos, head, deprel, *rest = row
        misc = rest[0] if rest else "_"
        feats = rest[1] if len(rest) > 1 else "_"
        lines.append(f"{k}\t{form}\t{lemma}\t{upos}\t_\t{feats}\t{head}\t{deprel}\t_\t{misc}")
    return "\n".join(lines) + "\n\n"


def document(doc_id: str, date: str, sentences: list[list[tuple]]) -> str:
    head = f"# newdoc id = {doc_id}\n# meta::dateCreated = {date}\n"
    return head + "".join(sentence(s) for s in sentences)


# "Troops of France crossed the border. They attacked." -- nmod affiliation, active
# attack, linked only through coreference (entity 1: Troops of France ... They).
NMOD_ACTIVE = document("nmod_active", "2015-08-21", [
    [("Troops", "troop", "NOUN", 4, "nsubj", "Entity=(1"),
     ("of", "of", "ADP", 3, "case"),
     ("France", "France", "PROPN", 1, "nmod", "Entity=(2)1)"),
     ("crossed", "cross", "VERB", 0, "root"),
     ("the", "the", "DET", 6, "det", "Entity=(3"),
     ("border", "border", "NOUN", 4, "obj", "Entity=3)"),
     (".", ".", "PUNCT", 4, "punct")],
    [("They", "they", "PRON", 2, "nsubj", "Entity=(1)"),
     ("attacked", "attack", "VERB", 0, "root"),
     (".", ".", "PUNCT", 2, "punct")],
])  # fmt: skip

# "The town was attacked by Iraqi soldiers." -- amod affiliation, passive agent (obl + by).
AMOD_PASSIVE = document("amod_passive", "2015-11-02", [
    [("The", "the", "DET", 2, "det", "Entity=(1"),
     ("town", "town", "NOUN", 4, "nsubj:pass", "Entity=1)"),
     ("was", "be", "AUX", 4, "aux:pass"),
     ("attacked", "attack", "VERB", 0, "root", "_", "Tense=Past|VerbForm=Part|Voice=Pass"),
     ("by", "by", "ADP", 7, "case"),
     ("Iraqi", "Iraqi", "ADJ", 7, "amod", "Entity=(2"),
     ("soldiers", "soldier", "NOUN", 4, "obl", "Entity=2)"),
     (".", ".", "PUNCT", 4, "punct")],
])  # fmt: skip

# "The president of the U.S. was attacked by rebels. He attacked." -- the president is
# a passive patient (no event from sentence 1), then an active agent; obl:agent rebels
# have no country.
OBL_AGENT = document("obl_agent", "2016-01-10", [
    [("The", "the", "DET", 2, "det", "Entity=(1"),
     ("president", "president", "NOUN", 7, "nsubj:pass"),
     ("of", "of", "ADP", 5, "case"),
     ("the", "the", "DET", 5, "det", "Entity=(2"),
     ("U.S.", "U.S.", "PROPN", 2, "nmod", "Entity=2)1)"),
     ("was", "be", "AUX", 7, "aux:pass"),
     ("attacked", "attack", "VERB", 0, "root"),
     ("by", "by", "ADP", 9, "case"),
     ("rebels", "rebel", "NOUN", 7, "obl:agent", "Entity=(3)"),
     (".", ".", "PUNCT", 7, "punct")],
    [("He", "he", "PRON", 2, "nsubj", "Entity=(1)"),
     ("attacked", "attack", "VERB", 0, "root"),
     (".", ".", "PUNCT", 2, "punct")],
])  # fmt: skip

# "French troops landed. The Iraqi troops attacked." with both mentions in one
# entity: two countries in the entity, so no event for either.
TWO_COUNTRIES = document("two_countries", "2016-02-01", [
    [("French", "French", "ADJ", 2, "amod", "Entity=(1"),
     ("troops", "troop", "NOUN", 3, "nsubj", "Entity=1)"),
     ("landed", "land", "VERB", 0, "root"),
     (".", ".", "PUNCT", 3, "punct")],
    [("The", "the", "DET", 3, "det", "Entity=(1"),
     ("Iraqi", "Iraqi", "ADJ", 3, "amod"),
     ("troops", "troop", "NOUN", 4, "nsubj", "Entity=1)"),
     ("attacked", "attack", "VERB", 0, "root"),
     (".", ".", "PUNCT", 4, "punct")],
])  # fmt: skip

# "Iraqis attacked. US forces attacked us." -- the stemming back-off (Iraqis -> iraqi),
# "US" as a compound, and the pronoun "us" that must not match USA.
STEM_COMPOUND = document("stem_compound", "2016-02-15", [
    [("Iraqis", "Iraqi", "PROPN", 2, "nsubj", "Entity=(1)"),
     ("attacked", "attack", "VERB", 0, "root"),
     (".", ".", "PUNCT", 2, "punct")],
    [("US", "US", "PROPN", 2, "compound", "Entity=(2"),
     ("forces", "force", "NOUN", 3, "nsubj", "Entity=2)"),
     ("attacked", "attack", "VERB", 0, "root"),
     ("us", "we", "PRON", 3, "obj", "Entity=(3)"),
     (".", ".", "PUNCT", 3, "punct")],
])  # fmt: skip

# "Paris spoke." -- a city: not in the names-and-demonyms lexicon.
CITY = document("city", "2016-03-01", [
    [("Paris", "Paris", "PROPN", 2, "nsubj", "Entity=(1)"),
     ("attacked", "attack", "VERB", 0, "root"),
     (".", ".", "PUNCT", 2, "punct")],
])  # fmt: skip

ALL = NMOD_ACTIVE + AMOD_PASSIVE + OBL_AGENT + TWO_COUNTRIES + STEM_COMPOUND + CITY


def read(text: str = ALL):
    return read_coref_documents(io.StringIO(text))
