"""The protocol layer: device model, annotation codecs, handshake stamps and the pure decision core.

Nothing in this package does I/O.
"""
