"""Array bytes on the wire: zstd where it pays, raw where it does not.

Measured on this machine (docs/decisions.md, "Proxy: compressing fetched arrays"): zstd at level
1 compresses a heat-equation grid 38-2,700x at 1.5-1.8 GB/s, lz4 only 22-206x, and regrouping
bytes by significance first helps neither on such grids; random doubles shrink by 7% at most.
So the server tries zstd on a sample of every large array and sends the whole array compressed
only when the sample shrank to at most :data:`WORTHWHILE_RATIO` of its size.
"""

from __future__ import annotations

import numpy as np

from shoal.proxy.protocol import Codec, ProtocolError

__all__ = ["Codec", "available", "decode", "encode"]

MIN_COMPRESSED_BYTES = 1 << 16
SAMPLE_BYTES = 1 << 18
WORTHWHILE_RATIO = 0.8
LEVEL = 1


def encode(array: np.ndarray, accepted: frozenset[Codec]) -> tuple[Codec, bytes | memoryview]:
    """The codec chosen for ``array`` (C-contiguous) and its encoded bytes."""
    raw = memoryview(array).cast("B")
    if Codec.ZSTD not in accepted or raw.nbytes < MIN_COMPRESSED_BYTES:
        return Codec.RAW, raw
    import zstandard

    compressor = zstandard.ZstdCompressor(level=LEVEL)
    sample = raw[:SAMPLE_BYTES]
    if len(compressor.compress(sample)) > WORTHWHILE_RATIO * sample.nbytes:
        return Codec.RAW, raw
    packed = compressor.compress(raw)
    if len(packed) > WORTHWHILE_RATIO * raw.nbytes:
        return Codec.RAW, raw
    return Codec.ZSTD, packed


def decode(codec: Codec, body: memoryview, raw_length: int) -> bytes | memoryview:
    """The ``raw_length`` bytes that ``body`` encodes; never more are allocated."""
    if codec == Codec.RAW:
        return body
    import zstandard

    try:
        raw = zstandard.ZstdDecompressor().decompress(body, max_output_size=raw_length)
    except zstandard.ZstdError as error:
        raise ProtocolError(f"compressed array: {error}") from None
    if len(raw) != raw_length:
        raise ProtocolError(f"compressed array decoded to {len(raw)} bytes, expected {raw_length}")
    return raw


def available() -> tuple[Codec, ...]:
    """The codecs this installation reads."""
    try:
        import zstandard  # noqa: F401
    except ImportError:
        return (Codec.RAW,)
    return (Codec.RAW, Codec.ZSTD)
