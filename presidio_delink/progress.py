"""The progress bar of the commands that go through documents one at a time.

tqdm is imported only when a bar is shown.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

__all__ = ["doc_bar"]


@contextlib.contextmanager
def doc_bar(
    enabled: bool, total: int | None = None, desc: str = "delinking"
) -> Iterator[Callable[..., None]]:
    """A function that counts documents done (``tick()`` one, ``tick(n)`` n): on a tqdm
    bar (closed on exit) when ``enabled``, else one that does nothing."""
    if not enabled:
        yield lambda n=1: None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, unit="doc", desc=desc)

    def tick(n: int = 1) -> None:
        bar.update(n)

    try:
        yield tick
    finally:
        bar.close()
