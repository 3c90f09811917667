"""Helpers for tests, benchmarks and notebooks; the plugin itself never imports them.

- `build_from_arch`: a registered model from its arch name, without a task or data directory.
- `host_sync`: `HostSyncRecorder`, the operations that make the host wait for the device.
"""
