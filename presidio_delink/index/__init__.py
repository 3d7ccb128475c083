"""The N-gram index (the only package that imports marisa_trie)."""

from presidio_delink.index.format import FORMAT_VERSION
from presidio_delink.index.ngram_index import NgramIndex
from presidio_delink.index.view_index import ViewIndex

__all__ = ["FORMAT_VERSION", "NgramIndex", "ViewIndex"]
