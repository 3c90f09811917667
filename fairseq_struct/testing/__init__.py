"""Helpers for tests, benchmarks and notebooks; the plugin itself never imports them."""
