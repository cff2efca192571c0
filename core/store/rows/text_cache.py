"""What a store remembers of the texts and lists it stored, so a conversation's turns are looked up once.

Invariants: only what a committed transaction stored is remembered (a transaction collects its ids in a
``shared_lists.Pending`` and ``commit`` adopts them after COMMIT); everything is keyed by run, since texts
belong to their run; ``clear`` after deleting runs (pruning), whose ids may be given to new rows.

A run this store created, while the cache still holds every text id the store committed for it, is
*complete*: a text of it the cache does not know is not stored yet, so it is inserted without a look-up.
Should another writer have stored the same text meanwhile, the run holds it twice, each row readable by
its id: a few bytes more, never a wrong text.
"""

from __future__ import annotations

from core.store.rows.shared_lists import ListMemory, Pending

TEXT_CACHE_SIZE = 4096
"""How many texts' ids a store remembers (text → id), so a conversation's turns are looked up once."""
TEXT_CACHE_CHARS = 1 << 24
"""How many characters those texts may hold in all: a remembered text is held, and a run's input may be
40 MB (``flujo store copy`` writes every run of a store through one)."""


class TextCache:
    """The ids of texts (and the latest lists, ``ListMemory``) that this store's transactions committed."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], int] = {}  # (run, text) → id, committed texts only
        self._chars = 0  # of the texts in _ids
        self._complete: set[str] = set()  # runs whose every committed text id is in _ids
        self.lists = ListMemory()

    def complete(self, run_id: str) -> bool:
        """Whether every text of run ``run_id`` that is stored is known here (the module docstring)."""
        return run_id in self._complete

    def get(self, run_id: str, text: str, pending: Pending) -> int | None:
        """The id of ``text`` among run ``run_id``'s texts, if this store knows it (committed or pending)."""
        key = (run_id, text)
        return self._ids.get(key) or pending.text_ids.get(key)

    def commit(self, pending: Pending) -> None:
        """Adopt what a transaction stored, once it committed; a transaction whose texts alone are more than
        the cache may hold is not remembered (nor are the runs it created complete: their texts are looked
        up)."""
        chars = sum(len(text) for _, text in pending.text_ids) if pending.text_ids else 0
        if len(self._ids) + len(pending.text_ids) > TEXT_CACHE_SIZE or self._chars + chars > TEXT_CACHE_CHARS:
            self._forget()  # their texts' ids are forgotten: look them up again
        if chars <= TEXT_CACHE_CHARS:
            self._ids.update(pending.text_ids)
            self._chars += chars
            self._complete.update(pending.created_runs)
        self.lists.commit(pending)

    def _forget(self) -> None:
        self._ids.clear()
        self._chars = 0
        self._complete.clear()

    def clear(self) -> None:
        self._forget()
        self.lists.clear()
