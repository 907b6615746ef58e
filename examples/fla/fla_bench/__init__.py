"""flash-linear-attention's chunked ops (fla-core, the released wheel) gated by tilegate."""
