"""``PipelineSample`` records read straight from their Avro binary encoding, for the metrics topic's common case.

A record written with the ``PipelineSample`` schema itself and no labels is: the pipeline and the SLI as Avro strings
(a zigzag varint length, then UTF-8), the value as 8 little-endian bytes, the time as a zigzag varint, and a zero byte
(the empty map). That shape is read here without a general Avro reader, and series names are remembered by their
bytes; anything else (labels, long names, a time outside the years 1 to 9999, bytes that are not exactly that shape) is
None, for the general decoder, so a value read here is always what the general decoder would read.
"""

from __future__ import annotations

import struct

from bot.domain.sli.samples import EARLIEST_MS, LATEST_MS

Key = tuple[str, str]
_DOUBLE = struct.Struct("<d").unpack_from
_TAIL = struct.Struct("<d7B").unpack_from  # the value, a time of six varint bytes (1970-06 to 2039 in ms), the empty map
TAIL = 15
NAMES_KEPT = 100_000  # series names remembered by their bytes


class Reader:
    """Reads records of the common shape; remembers the series names it saw."""

    def __init__(self) -> None:
        self._names: dict[bytes, Key | None] = {}

    def read(self, data: bytes) -> tuple[Key, float, int] | None:
        """``((pipeline, sli), value, time in ms)``, or None when the record is not of the common shape."""
        key = self._names.get(data[:-TAIL])
        if key is not None:  # names seen before, then what usually follows them, read at once
            value, b0, b1, b2, b3, b4, b5, end = _TAIL(data, len(data) - TAIL)
            if b0 & b1 & b2 & b3 & b4 & 0x80 and not b5 & 0x80 and not end:
                number = (b0 & 0x7F) | (b1 & 0x7F) << 7 | (b2 & 0x7F) << 14 | (b3 & 0x7F) << 21 | (b4 & 0x7F) << 28 | b5 << 35
                return key, value, (number >> 1) ^ -(number & 1)
        return self._read(data)

    def _read(self, data: bytes) -> tuple[Key, float, int] | None:
        size = len(data)
        if size < 12:
            return None
        first = data[0]
        if first & 0x81:  # a length of 64 or more (two bytes), or an odd zigzag (negative): not the common shape
            return None
        end = 1 + (first >> 1)
        if end >= size:
            return None
        second = data[end]
        if second & 0x81:
            return None
        end += 1 + (second >> 1)
        if end + 10 > size:
            return None
        prefix = data[:end]
        names = self._names
        key = names.get(prefix)
        if key is None:
            if prefix in names:
                return None  # names that are not UTF-8
            key = names[prefix] = _names(prefix, first >> 1)
            if len(names) > NAMES_KEPT:
                names.clear()
            if key is None:
                return None
        if data[-1] != 0:  # labels: not the common shape
            return None
        value = _DOUBLE(data, end)[0]
        position, shift, number = end + 8, 0, 0
        last = size - 1
        while position < last:
            byte = data[position]
            number |= (byte & 0x7F) << shift
            position += 1
            if not byte & 0x80:
                break
            shift += 7
        else:
            return None  # the time ran into the end
        if position != last or shift > 63:
            return None
        time = (number >> 1) ^ -(number & 1)
        return (key, value, time) if EARLIEST_MS <= time <= LATEST_MS else None


def _names(prefix: bytes, length: int) -> Key | None:
    try:
        return prefix[1:1 + length].decode(), prefix[2 + length:].decode()
    except UnicodeDecodeError:
        return None
