"""The preset dictionary ``codec.pack`` compresses a stored value against (deflate's ``zdict``).

A value of a few hundred bytes compressed alone finds few repeats in itself; compressed against a dictionary
of what such values usually hold, its common words and its JSON keys become references of two or three
bytes. The dictionary is written by hand: the JSON that flujo's stores write most (event payloads, usages,
message lists, references to stored texts) and common English words and phrases, from no particular text.
Deflate finds the nearest repeat soonest, so the most frequent fragments are the last.

Invariant: a stored value names the dictionary it was compressed against by its first byte (``VERSION``);
these bytes never change. Another dictionary is a new constant with a new version byte, and ``codec.unpack``
keeps reading this one.
"""

from __future__ import annotations

VERSION = 1
"""The first byte of a value compressed against ``DICTIONARY``."""

_ENGLISH = (
    "Here is a summary of the main points. Let me know if you would like more detail on any of them. "
    "For example, you could also consider the following options, depending on your budget and schedule. "
    "Thank you for the question; it is a good one. In short, the answer depends on what you need. "
    "First, make sure that everything is ready before you start. Second, check the results again. "
    "However, there are a few things to keep in mind: the cost, the time it takes, and the people involved. "
    "Because of this, I would recommend that we should wait until next week, when more information is available. "
    "Would you like me to write a draft? I can help with that. Please tell me which one you prefer. "
    "Yes, of course. No, I do not think so. I am not sure, but I believe it was about the same as before. "
    "She said that he had already been there, and they were both very happy with how it went. "
    "We have been working on this for a long time, and there is still something important to add. "
    "It is important to note that this is only an estimate; the actual number may be higher or lower. "
    "Could you please confirm the date, the time and the place? Once I have them, I will update the plan. "
    "The first step is to understand the problem. The next step is to find out what has changed since then. "
    "They would rather know now than later, which is why it should be done as soon as possible. "
    "Although it may seem difficult at first, most people find that it becomes easier with practice. "
    "without between through another something anything everything nothing whether himself herself "
    "themselves yourself myself itself really always usually often sometimes perhaps probably certainly "
    "people family friends house world life morning evening night year month day hour minute question answer "
    "information example different possible important necessary available several little great small large "
)

_JSON = (
    '{"role":"system","content":'
    '"history_injected":false,"history":{"conversation":"'
    ',"turns":0,"dropped":0,"mode":"messages"}}'
    '{"agent":"'
    '","messages":[{"role":"system","content":{"$text":'
    '{"input_tokens":0,"output_tokens":0,"requests":1,"cost_usd":0.0}'
    ',"model":"'
    '","attempts":1,"usage":{"input_tokens":'
    ',"output_tokens":'
    ',"requests":1,"cost_usd":'
    '{"output":{"$text":'
    '{"message":{"$text":'
    '},"answer":{"$text":'
    ',"history_injected":true,"history":{"conversation":"'
    '","messages":{"$text":['
    '[{"role":"user","content":{"$text":'
    '},{"role":"assistant","content":{"$text":'
    '}},{"role":"user","content":{"$text":'
    '}}]]'
)

DICTIONARY = (_ENGLISH + _JSON).encode("utf-8")
"""What ``codec.pack`` compresses against: at most 3,800 bytes, all inside deflate's window of 4 KB (``codec``)."""
