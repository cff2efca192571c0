"""Plain values every layer of core may read; this room imports nothing of core but itself.

Read in this order: ``usage`` (tokens, requests and cost), ``errors`` (the error tree), ``calls`` (an agent's
call and reply, chat messages, a person's question), ``events`` (what the trace records), ``records`` (runs,
steps, trace events and thread turns as the store keeps them), ``providers`` (the one table of model
providers), ``views`` and ``window_map`` (read-only snapshots and a small cache), ``codec`` (values made plain
for the store).
"""
