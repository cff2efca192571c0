"""What a store remembers of the texts and lists it stored, so a conversation's turns are looked up once.

Invariants: only what a committed transaction stored is remembered (a transaction collects its ids in a
``shared_lists.Pending`` and ``commit`` adopts them after COMMIT); everything is keyed by run, since texts
belong to their run; ``clear`` after deleting runs (pruning), whose ids may be given to new rows.
"""

from __future__ import annotations

from core.store.shared_lists import ListMemory, Pending

TEXT_CACHE_SIZE = 4096
"""How many texts' ids a store remembers (text → id), so a conversation's turns are looked up once."""


class TextCache:
    """The ids of texts (and the latest lists, ``ListMemory``) that this store's transactions committed."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], int] = {}  # (run, text) → id, committed texts only
        self.lists = ListMemory()

    def get(self, run_id: str, text: str, pending: Pending) -> int | None:
        """The id of ``text`` among run ``run_id``'s texts, if this store knows it (committed or pending)."""
        key = (run_id, text)
        return self._ids.get(key) or pending.text_ids.get(key)

    def commit(self, pending: Pending) -> None:
        """Adopt what a transaction stored, once it committed."""
        if len(self._ids) + len(pending.text_ids) > TEXT_CACHE_SIZE:
            self._ids.clear()
        self._ids.update(pending.text_ids)
        self.lists.commit(pending)

    def clear(self) -> None:
        self._ids.clear()
        self.lists.clear()
