"""The word lists every edit shares: the redaction placeholder, function words, and the
generic words a removed PII string may give back.

Why a module of their own: the choice of words to change (:mod:`presidio_delink.edits`)
prefers content words to :data:`FUNCTION_WORDS`, and the checks on a replacement
(:mod:`presidio_delink.acceptance`) refuse any word of removed PII but
:data:`COMMON_WORDS`; both read the same lists, and neither should import the other.
"""

from __future__ import annotations

REDACTED = "[REDACTED]"

_FUNCTION = """
    a an the this that these those some any each every no not and or but nor of in on at to
    for from by with without within into onto upon over under about after before between
    through during against among as than then so if is are was were be been being am has
    have had do does did will would shall should may might can could must it its he him his
    she her hers they them their theirs we us our ours you your yours i me my mine who whom
    whose which what where when why how there here all both either neither other another
    such same own only also very more most less least one two three s mr mrs ms dr no nos
"""
# Generic words: the function words, and words of names and places that identify nobody.
_COMMON = _FUNCTION + """
    first second new old miss prof sir madam st jr sr de del della der den di du da das dos
    la le les el al van von ten ter y e et und
    street road avenue lane square city town village county district region province state
    country republic kingdom university college school hospital clinic court tribunal police
    station prison company ltd inc plc corporation group bank church house hotel centre center
    north south east west northern southern eastern western upper lower great little saint
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday
"""
COMMON_WORDS = frozenset(_COMMON.split())
"""Words of a removed PII string that may come back alone: function words, name particles
and titles, generic words of place and organisation names, months and weekdays. Any other
word of it (a surname, a rare place name, a number) may not."""

FUNCTION_WORDS = frozenset(_FUNCTION.split())
"""Words a rewriter cannot generalise (``the`` -> ?): avoided when another choice of words
breaks the same N-grams with as few words."""

