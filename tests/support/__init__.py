"""Test support code shared by streamlet's test suites (not a test module itself)."""
