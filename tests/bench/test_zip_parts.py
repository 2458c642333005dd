"""builds.elf_parts, which says where a zip's bytes go, on real ELF files of this machine: its
parts add up to the whole file deflated, and what is not an ELF file is refused."""

import shutil
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from builds import PART_NAMES, elf_parts  # noqa: E402


@pytest.mark.parametrize("program", ["ls", "cargo"])
def test_the_parts_add_up_to_the_whole_file_deflated(program):
    elf = Path(shutil.which(program)).resolve().read_bytes()
    parts = elf_parts(elf)
    assert list(parts) == PART_NAMES
    whole = len(zlib.compress(elf, 6)) / 1e6
    # Each part deflated alone loses only what deflate's 32 KB window would have shared across
    # a boundary: a few KB per section.
    assert abs(sum(parts.values()) - whole) <= 0.01 * whole + 0.02, (parts, whole)
    assert parts["code"] > 0.3 * whole, parts
    assert parts["unwind tables"] > 0, parts


def test_what_is_not_a_64_bit_elf_file_is_refused():
    with pytest.raises(ValueError, match="not a 64-bit little-endian ELF file"):
        elf_parts(b"PK\x03\x04" + bytes(64))
