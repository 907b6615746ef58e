"""The protocol: how liger_bench's variants are measured (docs/liger.md)."""
