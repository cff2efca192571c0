"""Test doubles that talk real protocols on 127.0.0.1 (see openai_server)."""
