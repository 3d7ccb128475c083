"""The N-gram index (the only package that imports marisa_trie).

Rooms: ``ngram_index`` (:class:`NgramIndex`: open, look up; the query side) and
``view_index`` (one view's look-ups); ``build`` (the build driver and
:class:`BuildSettings`) and ``builder``, ``counting``, ``doctable``, ``vocab`` (the build
phases' tasks); ``format`` (the on-disk layout and ``meta.json``), ``shard`` (partition and
document-range files) and ``postings`` (the posting-list code), shared by both sides;
``segments`` (``index add``, ``index compact``) and ``segment_reader`` (several segments
read as one index).
"""

from presidio_delink.index.build import BuildSettings
from presidio_delink.index.format import FORMAT_VERSION
from presidio_delink.index.ngram_index import NgramIndex
from presidio_delink.index.segments import add_documents, compact, refresh
from presidio_delink.index.view_index import ViewIndex

__all__ = [
    "FORMAT_VERSION", "BuildSettings", "NgramIndex", "ViewIndex", "add_documents", "compact",
    "refresh",
]
