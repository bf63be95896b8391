"""CRC-32C helpers: masking, the table-driven 8-byte checksum, zero runs, cancelling words."""

from __future__ import annotations

import struct

import google_crc32c
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as tb_masked_crc32c

from boardd.reader import crc


def test_masked_crc_known_values() -> None:
    # From a real TFRecord (a file_version event), as rustboard's masked_crc tests use.
    assert crc.masked_crc32c(b"\x1a\x11CRC test, one two") == 0x5794D08A
    # RFC 3720 (iSCSI) B.4: CRC-32C of 32 zero bytes.
    assert crc.masked_crc32c(bytes(32)) == crc.mask(0x8A9136AA)
    assert crc.masked_crc32c(memoryview(b"abc")) == crc.masked_crc32c(b"abc")


@given(st.binary(max_size=200))
def test_masked_crc_matches_tensorboard(data: bytes) -> None:
    assert crc.masked_crc32c(data) == tb_masked_crc32c(data)


@given(st.integers(0, 2**32 - 1))
def test_unmask_inverts_mask(value: int) -> None:
    assert crc.unmask(crc.mask(value)) == value
    arr = np.array([value], dtype=np.uint32)
    assert int(crc.mask_array(arr)[0]) == crc.mask(value)
    assert int(crc.unmask_array(crc.mask_array(arr))[0]) == value


def test_table_driven_u64_crc_matches_google() -> None:
    rng = np.random.default_rng(7)
    values = np.concatenate(
        [
            rng.integers(0, 2**63, 500, dtype=np.uint64),
            np.array([0, 1, 255, 2**32, 2**64 - 1, 2**60], dtype=np.uint64),
        ]
    )
    got = crc.crc32c_u64(values).tolist()
    assert got == [google_crc32c.value(int(v).to_bytes(8, "little")) for v in values]


@pytest.mark.parametrize("n", [0, 1, 7, 8, 100, 4095, 4096, 4097, 70_000, 3 * 2**20 + 5])
def test_crc_of_zeros(n: int) -> None:
    assert crc.crc32c_of_zeros(n) == google_crc32c.value(bytes(n))


def test_crc_of_zeros_array_mixes_table_and_long_runs() -> None:
    lengths = np.array([0, 5, 4096, 10_000, 5, 10_000], dtype=np.int64)
    assert crc.crc32c_of_zeros_array(lengths).tolist() == [
        google_crc32c.value(bytes(int(n))) for n in lengths
    ]


@given(st.lists(st.binary(max_size=64), min_size=1, max_size=8), st.data())
def test_cancelling_words_zero_the_register_only_for_intact_records(
    payloads: list[bytes], data: st.DataObject
) -> None:
    lengths = np.array([len(p) for p in payloads], dtype=np.int64)
    stored = np.array([crc.masked_crc32c(p) for p in payloads], dtype=np.uint32)
    words = crc.cancelling_word(stored, lengths)
    stream = b"".join(p + struct.pack("<I", int(w)) for p, w in zip(payloads, words, strict=True))
    assert crc.register_is_zero_after(stream)
    # Corrupt one stored CRC: the register no longer ends at zero.
    victim = data.draw(st.integers(0, len(payloads) - 1))
    bad = stored.copy()
    bad[victim] ^= np.uint32(1 << data.draw(st.integers(0, 31)))
    words = crc.cancelling_word(bad, lengths)
    stream = b"".join(p + struct.pack("<I", int(w)) for p, w in zip(payloads, words, strict=True))
    assert not crc.register_is_zero_after(stream)


def test_twelve_zero_bytes_are_never_a_header() -> None:
    # The resync scan skips all-zero windows on the strength of this.
    assert crc.masked_crc32c(bytes(8)) != 0
