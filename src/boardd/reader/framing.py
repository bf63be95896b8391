"""Finding the records in a buffer of a TFRecord file, tolerating corruption.

A record is ``u64 length | u32 masked CRC-32C of the length | payload | u32 masked CRC-32C of
the payload``, all little-endian. :class:`Framer` finds the complete records of one buffer (a
file's bytes from some offset), what is corrupt between them, and where to resume. After a bad
length CRC, an impossible length or a bad payload CRC it *resynchronises*: it scans forward for
the next offset where a whole record validates (length, length CRC, payload and payload CRC).
The scan is vectorized with numpy, so holes of many megabytes cost milliseconds.

Performance notes (the hot path reads millions of ~80-byte records):

- Record boundaries are found by following the length fields, which guesses ahead: event
  files repeat a cycle of record sizes step after step, so after a few records read one by one
  the walk checks hundreds of guessed boundaries in one numpy pass (:func:`_walk`); everything
  else (length CRCs, payload CRCs, offsets) is checked for a whole window of records at once.
- A window's CRCs are verified with a single ``google_crc32c`` pass: every stored CRC is
  replaced by its "cancelling word" (:func:`boardd.reader.crc.cancelling_word`), after which the
  CRC register ends at zero exactly when every record is intact. Only when that fails are
  records checked one by one to find the culprit.
"""

from __future__ import annotations

import itertools
import struct

import google_crc32c
import numpy as np
import numpy.typing as npt

from boardd.reader import crc

HEADER_BYTES = 12  # u64 length + u32 masked CRC of the length
FOOTER_BYTES = 4  # u32 masked CRC of the payload
OVERHEAD_BYTES = HEADER_BYTES + FOOTER_BYTES

BAD_LENGTH_CRC = "bad length CRC"
BAD_PAYLOAD_CRC = "bad payload CRC"

_U64 = struct.Struct("<Q")
_EMPTY = np.empty(0, dtype=np.int64)
# The boundary walk proceeds in windows so that garbage that happens to parse as a chain of
# records (a zero-filled hole reads as empty records) is caught after one window, not a batch.
_FIRST_WINDOW = 64 * 2**10
_MAX_WINDOW = 4 * 2**20
# The resync scan also grows its steps: most holes are short, some are huge.
_FIRST_SCAN = 4 * 2**10
_MAX_SCAN = 2**20
# Payloads from this size up are checksummed one by one, in chunks, rather than copied whole
# into a window's scratch buffer: memory stays bounded by the batch plus a chunk.
_BIG_RECORD = 2**20
_CRC_CHUNK = 4 * 2**20
_CRC_SLICE = 256 * 2**10


def crc32c_of(buf: bytes, start: int, end: int) -> int:
    """Unmasked CRC-32C of ``buf[start:end]``, copying at most a chunk at a time."""
    if end - start <= _CRC_CHUNK:
        return int(google_crc32c.value(buf[start:end]))
    value = 0
    for chunk_start in range(start, end, _CRC_CHUNK):
        chunk = buf[chunk_start : min(end, chunk_start + _CRC_CHUNK)]
        value = google_crc32c.extend(value, chunk)
    return int(value)


def could_start_record(prefix: bytes, max_len: int) -> bool:
    """Whether the first (up to 8) bytes of a length field allow a length <= ``max_len``."""
    return int.from_bytes(prefix[:8], "little") <= max_len


def _too_long(length: int, max_len: int, *, partial: bool = False) -> str:
    at_least = "at least " if partial else ""
    return f"length {at_least}{length} exceeds max record size {max_len}"


_FOUND, _PENDING, _NONE = range(3)


class Framer:
    """Frames one buffer of a file: the records, the losses, and where to resume.

    Offsets are indices into the buffer. ``end`` is the resume point. When the bytes at ``end``
    are a valid header whose record is not all in the buffer, ``cut_end`` is that record's end.
    ``pending_reason`` is set when that record was found by a resync and so still needs its
    payload checked before it is trusted.
    """

    def __init__(self, buf: bytes, *, check_payloads: bool, max_len: int, unverified: str | None):
        self.buf = buf
        self.size = len(buf)
        self.check_payloads = check_payloads
        self.max_len = max_len
        self.unverified = unverified
        self.starts: list[npt.NDArray[np.int64]] = []
        self.lengths: list[npt.NDArray[np.int64]] = []
        self.losses: list[tuple[int, int, str]] = []
        self.end = 0
        self.cut_end: int | None = None
        self.pending_reason: str | None = None
        self.scratch = bytearray()  # reused by the batched CRC check
        self.u8 = np.frombuffer(buf, dtype=np.uint8)
        # Views of the u32 and u64 that start at every byte (unaligned, stride 1): gathering
        # fields at arbitrary offsets is then one fancy-indexing operation.
        if self.size >= 8:
            self.u32 = np.ndarray((self.size - 3,), dtype="<u4", buffer=buf, strides=(1,))
            self.u64 = np.ndarray((self.size - 7,), dtype="<u8", buffer=buf, strides=(1,))
        else:
            self.u32 = np.empty(0, dtype="<u4")
            self.u64 = np.empty(0, dtype="<u8")

    def run(self) -> None:
        pos: int | None = 0
        window = _FIRST_WINDOW
        while pos is not None:
            pos, window = self._step(pos, window)

    def _step(self, pos: int, window: int) -> tuple[int | None, int]:
        """Walks and checks one window of records from ``pos``; returns where to go on."""
        heads, stop = self._walk(pos, pos + window)
        raw = self.u64[heads]
        lengths = raw.astype(np.int64)
        valid, reason, payloads_ok = self._check(heads, raw, lengths)
        carried, self.unverified = self.unverified, None
        if carried is not None and valid and not self._payload_ok(pos, int(lengths[0])):
            # The record that an earlier resync stopped at was a false start: the hole goes on.
            return self._resync(pos, pos + 1, carried), _FIRST_WINDOW
        if payloads_ok < valid:
            self._accept(heads[:payloads_ok], lengths[:payloads_ok])
            head = int(heads[payloads_ok])
            return self._skip_bad_payload(head, int(lengths[payloads_ok])), _FIRST_WINDOW
        self._accept(heads[:valid], lengths[:valid])
        if valid < heads.shape[0]:
            head = int(heads[valid])
            return self._resync(head, head + 1, reason), _FIRST_WINDOW
        carried = carried if heads.shape[0] == 0 else None
        return self._after_walk(stop, carried), min(window * 4, _MAX_WINDOW)

    def _walk(self, pos: int, until: int) -> tuple[npt.NDArray[np.int64], int]:
        """Follows length fields from ``pos`` while records fit the buffer; nothing is checked.

        Returns the record starts and the offset where the walk stopped: past ``until``, or at
        a record that does not fit, or where fewer than 16 bytes are left.
        """
        return _walk(self.buf, self.u64, pos, min(self.size - OVERHEAD_BYTES, until))

    def _check(
        self,
        heads: npt.NDArray[np.int64],
        raw: npt.NDArray[np.uint64],
        lengths: npt.NDArray[np.int64],
    ) -> tuple[int, str, int]:
        """How many leading records have sound headers, why the next one has not, and how many
        leading records have sound payloads too (checked in ``ALWAYS`` mode only)."""
        count = int(heads.shape[0])
        if count == 0:
            return 0, "", 0
        stored = self.u32[heads + 8]
        fits = int(lengths.max()) <= self.max_len
        if self.check_payloads:
            footers = self.u32[heads + HEADER_BYTES + lengths]
            if fits and self._window_intact(heads, raw, lengths, stored, footers):
                return count, "", count
        elif fits and _headers_intact(raw, stored):
            return count, "", count
        # Something is wrong: find exactly what, record by record.
        sound = crc.mask_array(crc.crc32c_u64(raw)) == stored
        bad = ~sound | (lengths > self.max_len)
        valid = int(np.argmax(bad)) if bad.any() else count
        reason = ""
        if valid < count:
            too_long = _too_long(int(raw[valid]), self.max_len)
            reason = too_long if sound[valid] else BAD_LENGTH_CRC
        payloads_ok = valid
        if self.check_payloads:
            payloads_ok = self._first_bad_payload(heads[:valid], lengths[:valid])
        return valid, reason, payloads_ok

    def _first_bad_payload(
        self, heads: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]
    ) -> int:
        """The index of the first record whose payload CRC fails, or the count if none does."""
        pairs = zip(heads.tolist(), lengths.tolist(), strict=True)
        return next((i for i, (h, n) in enumerate(pairs) if not self._payload_ok(h, n)), len(heads))

    def _window_intact(
        self,
        heads: npt.NDArray[np.int64],
        raw: npt.NDArray[np.uint64],
        lengths: npt.NDArray[np.int64],
        stored: npt.NDArray[np.uint32],
        footers: npt.NDArray[np.uint32],
    ) -> bool:
        """Whether every header and payload CRC of a window holds, in one CRC pass."""
        if int(lengths.max()) >= _BIG_RECORD:
            return _headers_intact(raw, stored) and self._first_bad_payload(heads, lengths) == len(
                heads
            )
        ends = heads + lengths + OVERHEAD_BYTES
        # Check in slices of about _CRC_SLICE bytes: the copies stay in cache and the scratch
        # buffer is reused, which beats one big copy (page faults) by far.
        cuts = np.flatnonzero(np.diff((ends - 1) // _CRC_SLICE)) + 1
        bounds = [0, *cuts.tolist(), int(heads.shape[0])]
        cancel_length = crc.unmask_array(stored) ^ np.uint32(crc.CRC_OF_8_ZEROS)
        cancel_payload = crc.cancelling_word(footers, lengths)
        for a, b in itertools.pairwise(bounds):
            first = int(heads[a])
            size = int(ends[b - 1]) - first
            scratch = self._scratch(size)
            scratch[:size] = memoryview(self.buf)[first : first + size]
            words = np.ndarray((size - 3,), dtype="<u4", buffer=scratch, strides=(1,))
            rel = heads[a:b] - first
            words[rel + 8] = cancel_length[a:b]
            words[rel + HEADER_BYTES + lengths[a:b]] = cancel_payload[a:b]
            del words  # release the buffer export
            if not crc.register_is_zero_after(bytes(memoryview(scratch)[:size])):
                return False
        return True

    def _scratch(self, size: int) -> bytearray:
        if len(self.scratch) < size:
            # Grown by doubling up to twice a slice: a framer per small file must not zero
            # 512 KiB it never uses (over many small files, a large share of a cold catch-up's
            # CPU: bench/bench_scale.py).
            self.scratch = bytearray(max(size, min(2 * size, 2 * _CRC_SLICE)))
        return self.scratch

    def _payload_ok(self, head: int, length: int) -> bool:
        start = head + HEADER_BYTES
        end = start + length
        return crc.mask(crc32c_of(self.buf, start, end)) == int(self.u32[end])

    def _header_ok(self, pos: int) -> tuple[int, str]:
        """The length at ``pos`` (a whole header is in the buffer) and what is wrong with it."""
        length = int(self.u64[pos])
        if crc.masked_crc32c(self.buf[pos : pos + 8]) != int(self.u32[pos + 8]):
            return length, BAD_LENGTH_CRC
        if length > self.max_len:
            return length, _too_long(length, self.max_len)
        return length, ""

    def _after_walk(self, stop: int, carried: str | None) -> int | None:
        """Decides what the bytes where a walk stopped are; returns where to go on, if anywhere."""
        left = self.size - stop
        if left >= OVERHEAD_BYTES and stop + OVERHEAD_BYTES + int(self.u64[stop]) <= self.size:
            return stop  # the walk window ended, not the buffer
        if left < HEADER_BYTES:
            prefix = self.buf[stop : stop + 8]
            if left == 0 or could_start_record(prefix, self.max_len):
                self.end = stop
                return None
            too_long = _too_long(int.from_bytes(prefix, "little"), self.max_len, partial=True)
            return self._resync(stop, stop + 1, too_long)
        length, problem = self._header_ok(stop)
        if problem:
            return self._resync(stop, stop + 1, carried or problem)
        self.end = stop
        self.cut_end = stop + OVERHEAD_BYTES + length
        self.pending_reason = carried
        return None

    def _resync(self, lost_from: int, scan_from: int, reason: str) -> int | None:
        """Skips corrupt bytes from ``lost_from``: records the loss and returns the next record."""
        kind, pos = self._scan(scan_from, None)
        self._lose(lost_from, pos, reason)
        if kind == _FOUND:
            return pos
        self.end = pos
        if kind == _PENDING:
            self.cut_end = pos + OVERHEAD_BYTES + int(self.u64[pos])
            self.pending_reason = reason
        return None

    def _skip_bad_payload(self, head: int, length: int) -> int:
        """Skips a record whose header is sound but whose payload CRC fails.

        The length was right (its CRC held), so the next record is normally at the record's
        end. But if the record is a torn write that another writer appended after, a whole
        valid record starts inside it: look for one there first.
        """
        end = head + OVERHEAD_BYTES + length
        kind, pos = self._scan(head + 1, end)
        resume = pos if kind == _FOUND else end
        self._lose(head, resume, BAD_PAYLOAD_CRC)
        return resume

    def _scan(self, start: int, limit: int | None) -> tuple[int, int]:
        """Finds the first offset from ``start`` where a valid record begins.

        Returns ``(_FOUND, pos)`` for a whole validated record; ``(_PENDING, pos)`` for a sound
        header whose record is not all in the buffer (it cannot be judged yet); ``(_NONE, pos)``
        when nothing was found, ``pos`` being the first offset that could still begin a record
        once more bytes arrive. With ``limit``, only offsets below it are tried, and only whole
        records count.
        """
        whole = self.size - (HEADER_BYTES - 1)  # offsets below this have a whole header
        stop = whole if limit is None else min(limit, whole)
        pos = start
        step = _FIRST_SCAN
        while pos < stop:
            upto = min(stop, pos + step)
            step = min(step * 4, _MAX_SCAN)
            for candidate in self._candidates(pos, upto).tolist():
                end = candidate + OVERHEAD_BYTES + int(self.u64[candidate])
                if end <= self.size:
                    if self._payload_ok(candidate, end - candidate - OVERHEAD_BYTES):
                        return _FOUND, candidate
                elif limit is None:
                    return _PENDING, candidate
            pos = upto
        if limit is not None:
            return _NONE, limit
        for pos in range(max(start, whole), self.size):
            if could_start_record(self.buf[pos : pos + 8], self.max_len):
                return _NONE, pos
        return _NONE, self.size

    def _candidates(self, start: int, stop: int) -> npt.NDArray[np.int64]:
        """Offsets in ``[start, stop)`` holding a header with a matching length CRC and an
        acceptable length. ``stop + 11`` must not exceed the buffer."""
        count = stop - start
        if self.max_len < 2**32:
            # Cheap filter first: the high half of the length must be zero. All passes run on
            # contiguous bool arrays, which numpy vectorizes well.
            zero = self.u8[start : stop + HEADER_BYTES - 1] == 0
            pairs = zero[:-1] & zero[1:]
            quads = pairs[:-2] & pairs[2:]  # quads[i]: the four bytes from start + i are zero
            # Twelve zero bytes never form a header (the masked CRC of length 0 is not 0):
            # this makes zero-filled holes cheap. (a > b is a and not b.)
            maybe = np.greater(quads[4 : count + 4], quads[:count] & quads[8 : count + 8])
        else:
            maybe = self.u64[start:stop] <= self.max_len
        found = np.flatnonzero(maybe) + start
        if found.shape[0] == 0:
            return found
        raw = self.u64[found]
        found, raw = found[raw <= self.max_len], raw[raw <= self.max_len]
        sound = crc.mask_array(crc.crc32c_u64(raw)) == self.u32[found + 8]
        result: npt.NDArray[np.int64] = found[sound]
        return result

    def _accept(self, heads: npt.NDArray[np.int64], lengths: npt.NDArray[np.int64]) -> None:
        if heads.shape[0]:
            self.starts.append(heads + HEADER_BYTES)
            self.lengths.append(lengths)

    def _lose(self, start: int, end: int, reason: str) -> None:
        if end <= start:
            return
        if self.losses and self.losses[-1][1] == start:
            first, _, first_reason = self.losses[-1]
            self.losses[-1] = (first, end, first_reason)
        else:
            self.losses.append((start, end, reason))


# The boundary walk guesses ahead (see _walk): after a few records read one by one, it assumes
# their pattern of lengths repeats and checks the guess for many records in one numpy pass.
_PROBE_FIRST = 8  # records read one by one before a guess
_PROBE_MAX = 512  # ... growing to this while no pattern shows
_MAX_PERIOD = 16  # longest cycle of record lengths looked for
_GUESS_FIRST = 256  # records in a first guess
_GUESS_MAX = 64 * 2**10


def _walk_simple(buf: bytes, pos: int, last: int) -> tuple[list[int], int]:
    """Record starts from ``pos`` while they are at most ``last``, one record at a time; and
    the offset after the last one. The reference for :func:`_walk`."""
    unpack = _U64.unpack_from
    heads: list[int] = []
    append = heads.append
    while pos <= last:
        append(pos)
        pos += unpack(buf, pos)[0] + OVERHEAD_BYTES
    return heads, pos


def _walk(
    buf: bytes, u64: npt.NDArray[np.uint64], pos: int, last: int
) -> tuple[npt.NDArray[np.int64], int]:
    """The record starts from ``pos`` that are at most ``last``, following length fields, and
    where the walk stopped: past ``last``, or at the start of a record that does not end in
    the buffer (nothing is checked here).

    Each record's start depends on the previous one's length, so a plain walk costs a Python
    step per record, which dominates for small records. Event files are regular, though: a
    training loop writes the same events, of the same sizes, step after step. So after a few
    records read one by one, the walk assumes their cycle of record sizes repeats, computes
    where the next few hundred or thousand records would start, and checks all of them at once
    by reading the lengths there: a guessed start is right exactly when the guessed start
    before it is right and its length leads to it. Everything up to the first wrong guess is
    kept, and the walk goes on one by one from the true end of the last right record. The
    result is always the plain walk's (:func:`_walk_simple`); only its cost changes.
    """
    size = len(buf)
    unpack = _U64.unpack_from
    parts: list[npt.NDArray[np.int64]] = []
    heads: list[int] = []
    append = heads.append
    probe, guess = _PROBE_FIRST, _GUESS_FIRST
    while pos <= last:
        n = probe
        while pos <= last and n:
            append(pos)
            pos += unpack(buf, pos)[0] + OVERHEAD_BYTES
            n -= 1
        if pos > last:
            break
        cycle = _cycle(heads, pos)
        if cycle is None:
            probe = min(probe * 2, _PROBE_MAX)
            continue
        found, pos = _follow(u64, pos, last, cycle, guess)
        if heads:
            parts.append(np.array(heads, dtype=np.int64))
            heads.clear()
        parts.append(found)
        kept = int(found.shape[0])
        if kept == guess:
            guess = min(guess * 4, _GUESS_MAX)  # the guess held all the way: guess further
            probe = _PROBE_FIRST
        elif kept > 2 * len(cycle):
            # The pattern held for a while: guess about that far next time.
            guess = min(max(_GUESS_FIRST, 2 * kept), _GUESS_MAX)
            probe = _PROBE_FIRST
        else:
            probe = min(probe * 2, _PROBE_MAX)  # the pattern broke at once: look longer
    if heads:
        parts.append(np.array(heads, dtype=np.int64))
    starts = np.concatenate(parts) if parts else _EMPTY
    if pos > size:
        # The last record does not end in the buffer: the walk stops at its start.
        pos = int(starts[-1])
        starts = starts[:-1]
    return starts, pos


def _cycle(heads: list[int], pos: int) -> list[int] | None:
    """The shortest cycle of record sizes that the last records repeat, if any (at least
    twice over); ``pos`` is where the last record ends."""
    tail = heads[-2 * _MAX_PERIOD :]
    sizes = [b - a for a, b in itertools.pairwise([*tail, pos])]
    for period in range(1, len(sizes) // 2 + 1):
        if sizes[-period:] == sizes[-2 * period : -period]:
            return sizes[-period:]
    return None


def _follow(
    u64: npt.NDArray[np.uint64], pos: int, last: int, cycle: list[int], count: int
) -> tuple[npt.NDArray[np.int64], int]:
    """Checks the guess that up to ``count`` records from ``pos`` (a true record start) repeat
    ``cycle``; returns the starts that hold (at least ``pos``) and where the next record is."""
    offsets, lengths = _guess(tuple(cycle), count)
    n = int(np.searchsorted(offsets, last - pos, side="right"))
    starts = offsets[:n] + pos
    found = u64[starts]
    wrong = found[:-1] != lengths[: n - 1]
    first = int(np.argmax(wrong)) if n > 1 else 0
    if n > 1 and not wrong[first]:
        first = n - 1
    end = int(starts[first]) + OVERHEAD_BYTES + int(found[first])
    return starts[: first + 1], end


_GUESSES: dict[tuple[tuple[int, ...], int], tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]]
_GUESSES = {}


def _guess(
    cycle: tuple[int, ...], count: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint64]]:
    """Offsets of ``count`` records repeating ``cycle`` (record sizes), and the length field
    each record must hold for the next to start where guessed. Cached: files repeat."""
    key = (cycle, count)
    hit = _GUESSES.get(key)
    if hit is None:
        sizes = np.tile(np.array(cycle, dtype=np.int64), -(-count // len(cycle)))[:count]
        offsets = np.zeros(count, dtype=np.int64)
        np.cumsum(sizes[:-1], out=offsets[1:])
        if len(_GUESSES) >= 256:
            _GUESSES.clear()
        hit = _GUESSES[key] = (offsets, (sizes - OVERHEAD_BYTES).astype(np.uint64))
    return hit


def _headers_intact(raw: npt.NDArray[np.uint64], stored: npt.NDArray[np.uint32]) -> bool:
    """Whether every length CRC holds, in one CRC pass over 12 bytes per record."""
    words = np.empty((raw.shape[0], 3), dtype="<u4")
    words[:, 0] = raw & np.uint64(0xFFFFFFFF)
    words[:, 1] = raw >> np.uint64(32)
    words[:, 2] = crc.unmask_array(stored) ^ np.uint32(crc.CRC_OF_8_ZEROS)
    return crc.register_is_zero_after(words.tobytes())
