"""Text: counting it, rendering it, masking it; above ``core.model``, below everything else.

Read in this order: ``tokens`` (the one place that maps a model to its tokenizer; ``ascii_tokens`` and the
shipped ``tokenizer_data/`` count without tiktoken), ``turns`` (a conversation's turns, which know their token
count), ``bounds`` (what one render may cost; the ``[bounds]`` settings) and ``sandbox``, then ``templates``
(templates and expressions), ``redaction`` (masking secrets; ``embedded_json``), ``schema_check`` (a person's
answer against its schema).
"""
