"""Tests of the runner."""
