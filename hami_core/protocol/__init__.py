"""The protocol layer: device model, codecs, handshake stamps and the pure decision core; no I/O."""
