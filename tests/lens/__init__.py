"""Tests of lens: the span tree, the plain and streamed views, masking, redaction and the viewer."""
