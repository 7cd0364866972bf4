"""Tests of the real-vLLM backend: server lifecycle, /metrics parsing, the load client."""
