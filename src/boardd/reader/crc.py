"""CRC-32C as TFRecords use it: masked checksums, and numpy-vectorized helpers for many at once.

A TFRecord checksum is CRC-32C (Castagnoli) of the bytes, then *masked* (rotated right by 15
bits, plus a constant) so that a CRC of data that embeds CRCs does not degenerate. Single
checksums go through ``google_crc32c`` (hardware-accelerated). The vectorized helpers serve the
framing layer's hot and recovery paths:

- :func:`crc32c_u64` checksums the 8-byte little-endian length field of thousands of records in
  a few numpy operations (table-driven, "slicing by 8").
- :func:`cancelling_word` exploits linearity: with a zero initial register, feeding a message's
  own register value after it (as 4 little-endian bytes) brings the register back to zero. If
  every stored checksum of a buffer is replaced by its cancelling word, one ``google_crc32c``
  pass over the whole buffer ends at zero exactly when every record is intact, which is far
  cheaper than one call per record.
"""

from __future__ import annotations

import functools

import google_crc32c
import numpy as np
import numpy.typing as npt

_POLY = 0x82F63B78  # CRC-32C, bit-reflected
_MASK_DELTA = 0xA282EAD8
_U32 = 0xFFFFFFFF
_SMALL_ZEROS = 4096  # lengths below this use a precomputed table of zero-run checksums


def _make_tables() -> npt.NDArray[np.uint32]:
    """Slicing tables: row k maps a byte to its register contribution k zero bytes later."""
    t0 = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ (_POLY if crc & 1 else 0)
        t0.append(crc)
    rows = [np.array(t0, dtype=np.uint32)]
    for _ in range(7):
        prev = rows[-1]
        rows.append(rows[0][prev & 0xFF] ^ (prev >> np.uint32(8)))
    return np.stack(rows)


TABLES: npt.NDArray[np.uint32] = _make_tables()
_T0 = [int(v) for v in TABLES[0]]
#: CRC-32C of eight zero bytes: the affine offset of the table-driven 8-byte checksum.
CRC_OF_8_ZEROS: int = google_crc32c.value(bytes(8))


def mask(crc: int) -> int:
    """The TFRecord masking of a CRC-32C value."""
    return ((((crc >> 15) | (crc << 17)) & _U32) + _MASK_DELTA) & _U32


def unmask(masked: int) -> int:
    """Inverts :func:`mask`."""
    rot = (masked - _MASK_DELTA) & _U32
    return ((rot >> 17) | (rot << 15)) & _U32


def masked_crc32c(data: bytes | bytearray | memoryview) -> int:
    """The masked CRC-32C of ``data``, as stored in a TFRecord header or footer."""
    # google_crc32c accepts only immutable ``bytes``.
    chunk = data if isinstance(data, bytes) else bytes(data)
    return mask(google_crc32c.value(chunk))


def mask_array(crcs: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """:func:`mask` for a whole array (uint32 arithmetic wraps, as the mask wants)."""
    rotated = (crcs >> np.uint32(15)) | (crcs << np.uint32(17))
    return rotated + np.uint32(_MASK_DELTA)


def unmask_array(masked: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint32]:
    """:func:`unmask` for a whole array."""
    rot = masked - np.uint32(_MASK_DELTA)
    return (rot >> np.uint32(17)) | (rot << np.uint32(15))


def crc32c_u64(values: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint32]:
    """CRC-32C of each value's 8 little-endian bytes (unmasked), table-driven.

    CRC is affine in the data: the checksum of 8 bytes is the XOR of each byte's table entry for
    its distance from the end, XOR the checksum of 8 zero bytes.
    """
    as_bytes = np.ascontiguousarray(values, dtype="<u8").view(np.uint8).reshape(-1, 8)
    crc = np.full(as_bytes.shape[0], CRC_OF_8_ZEROS, dtype=np.uint32)
    for j in range(8):
        crc ^= TABLES[7 - j][as_bytes[:, j]]
    return crc


# GF(2)[x] arithmetic modulo the CRC polynomial in zlib's bit-reflected convention, where the
# constant polynomial 1 is 0x80000000. Advancing a CRC register over n zero bytes multiplies it
# by x^(8n); this gives checksums of long zero runs without touching n bytes.
def _mulmod(a: int, b: int) -> int:
    bit = 1 << 31
    product = 0
    while a:
        if a & bit:
            product ^= b
            a ^= bit
        bit >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return product


@functools.cache
def _x_pow_2k(k: int) -> int:
    """x^(2^k) mod P."""
    if k == 0:
        return 1 << 30  # x
    half = _x_pow_2k(k - 1)
    return _mulmod(half, half)


def _x_pow(e: int) -> int:
    result = 1 << 31
    k = 0
    while e:
        if e & 1:
            result = _mulmod(_x_pow_2k(k), result)
        e >>= 1
        k += 1
    return result


@functools.lru_cache(maxsize=4096)
def crc32c_of_zeros(n: int) -> int:
    """CRC-32C of ``n`` zero bytes, in O(log n) time and O(1) memory."""
    if n < _SMALL_ZEROS:
        return int(_zeros_table()[n])
    return ~_mulmod(_x_pow(8 * n), _U32) & _U32


@functools.cache
def _zeros_table() -> npt.NDArray[np.uint32]:
    table = np.empty(_SMALL_ZEROS, dtype=np.uint32)
    register = _U32
    for n in range(_SMALL_ZEROS):
        table[n] = ~register & _U32
        register = _T0[register & 0xFF] ^ (register >> 8)
    return table


def crc32c_of_zeros_array(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]:
    """:func:`crc32c_of_zeros` for each length."""
    table = _zeros_table()
    if lengths.size == 0 or int(lengths.max()) < _SMALL_ZEROS:
        return table[lengths]
    out = np.empty(lengths.shape[0], dtype=np.uint32)
    small = lengths < _SMALL_ZEROS
    out[small] = table[lengths[small]]
    distinct, inverse = np.unique(lengths[~small], return_inverse=True)
    out[~small] = np.array([crc32c_of_zeros(int(n)) for n in distinct], dtype=np.uint32)[inverse]
    return out


def cancelling_word(
    stored_masked: npt.NDArray[np.uint32], lengths: npt.NDArray[np.int64]
) -> npt.NDArray[np.uint32]:
    """The 4-byte words that cancel a message's CRC register when the stored CRC is right.

    For a message ``m`` of length ``n`` whose correct masked CRC is ``stored_masked``, processing
    ``m`` then the returned word (little-endian) from a zero register leaves the register at
    zero. Any other message of that length leaves it non-zero. (With a zero initial register and
    no final inversion, the register after ``m`` is ``crc32c(m) ^ crc32c(zeros(n))``.)
    """
    return unmask_array(stored_masked) ^ crc32c_of_zeros_array(lengths)


def register_is_zero_after(data: bytes) -> bool:
    """Whether ``data`` leaves a zero-initialized CRC-32C register at zero.

    ``google_crc32c.extend`` continues from a finished checksum, i.e. from the inverted register:
    starting from ``0xFFFFFFFF`` is starting from register zero, and a zero final register reads
    back as ``0xFFFFFFFF``.
    """
    return bool(google_crc32c.extend(_U32, data) == _U32)
