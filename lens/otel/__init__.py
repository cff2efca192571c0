"""A run as an OpenTelemetry trace in the GenAI semantic conventions (docs/observability.md).

``lens.otel.plan`` plans the spans from what the store holds, ``lens.otel.genai`` holds the conventions' words
and message shapes, ``lens.otel.target`` says where they go; none of them imports OpenTelemetry.
``lens.otel.sending`` makes the spans with the OpenTelemetry SDK and sends them over OTLP/HTTP: it is imported
only when a trace is sent (the ``otel`` extra). Used through ``lens``'s front door.
"""
