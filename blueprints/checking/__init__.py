"""Checking a blueprint: the schema's verdict as findings, then the checks across values, then its imports.

Read in this order: ``validation`` (pydantic's errors at their file:line:col, in plain words from
``value_words``), ``salvage`` (the parts that validate, so one pass reports every finding), ``checks/``
(names, references, templates, loops, ...: each a function of a ``Checker``), ``speakers`` and
``callables`` (who speaks in a conversation, the ``module:function`` a blueprint names: used by the checks
and by the compiler), ``analysis`` (one file: read, validate, check), ``import_graph`` (every imported
file, once), ``loader`` (``validate_file`` and ``load_blueprint``: the room's entry).
It imports ``blueprints.schema`` and ``blueprints.reading``, never the compiler or the explainer.
"""
