"""The N-gram index (the only package that imports marisa_trie)."""

from presidio_delink.index.ngram_index import FORMAT_VERSION, NgramIndex

__all__ = ["FORMAT_VERSION", "NgramIndex"]
