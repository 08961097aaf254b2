"""The disassembler: golden listings and the SHOAL_DUMP switch."""

from __future__ import annotations

import io

import numpy as np
from bytecode_cases import every_opcode_batch

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, disassemble, make_attrs
from shoal.bytecode.disasm import dump, dump_requested, format_view

F8, F4, BIG_I4 = np.dtype("f8"), np.dtype("f4"), np.dtype(">i4")

GOLDEN = """\
batch: 3 bases (1 with data, 128 B), 6 instructions
  base b3  f8[16]  data
  base b7  f8[16]
  base b8  >i4[4]
   0  add        b7:f8(4,4) <- b3:f8(4,4), 2.0
   1  sum        b7:f4@64(4) <- b3:f8(4,4)/(8,32)  {axis=0, dtype=f4, keepdims=False}
   2  where      b8:>i4(4) <- b3:b1(4), i4(-1), 1180591620717411303424
   3  gather     b7:f8(2) <- b3:f8(16), b8:>i4(2)  {key=(('array', 0),)}
   4  arange     b7:f8(5)  {start=0, step=1, stop=5}
   5  release     {base=3}"""


def golden_batch() -> Batch:
    batch = Batch(
        bases=[BaseDecl(3, F8, 16), BaseDecl(7, F8, 16), BaseDecl(8, BIG_I4, 4)],
        data={3: np.arange(16.0)},
    )
    batch.instructions += [
        Instruction("add", (View(7, F8, 0, (4, 4), (32, 8)),), (View(3, F8, 0, (4, 4), (32, 8)), Const(2.0)), ()),
        Instruction("sum", (View(7, F4, 64, (4,), (4,)),), (View(3, F8, 0, (4, 4), (8, 32)),),
                    make_attrs(axis=0, dtype=F4, keepdims=False)),
        Instruction("where", (View(8, BIG_I4, 0, (4,), (4,)),),
                    (View(3, np.dtype("?"), 0, (4,), (1,)), Const(np.int32(-1)), Const(2**70)), ()),
        Instruction("gather", (View(7, F8, 0, (2,), (8,)),),
                    (View(3, F8, 0, (16,), (8,)), View(8, BIG_I4, 0, (2,), (4,))), make_attrs(key=(("array", 0),))),
        Instruction("arange", (View(7, F8, 0, (5,), (8,)),), (), make_attrs(start=0, stop=5, step=1)),
        Instruction("release", (), (), make_attrs(base=3)),
    ]  # fmt: skip
    return batch


def test_golden_listing():
    assert disassemble(golden_batch()) == GOLDEN


def test_empty_batch():
    assert disassemble(Batch()) == "batch: 0 bases (0 with data, 0 B), 0 instructions"


def test_views_show_offset_and_strides_only_when_needed():
    assert format_view(View(1, F8, 0, (), ())) == "b1:f8()"
    assert format_view(View(1, F8, 16, (2, 3), (24, 8))) == "b1:f8@16(2,3)"
    assert format_view(View(1, F8, 0, (3, 1), (8, 999))) == "b1:f8(3,1)"
    assert format_view(View(1, F8, 40, (3,), (-8,))) == "b1:f8@40(3)/(-8)"
    assert format_view(View(1, np.dtype("c16"), 0, (2, 2), (0, 16))) == "b1:c16(2,2)/(0,16)"


def test_constants_tell_weak_from_strong():
    batch = Batch(instructions=[Instruction("add", (View(0, F8, 0, (1,), (8,)),),
                                            (Const(np.float32(1.5)), Const(True)), ())])  # fmt: skip
    line = disassemble(batch).splitlines()[-1]
    assert line.endswith("<- f4(1.5), True")


def test_data_sizes_are_readable():
    batch = Batch(bases=[BaseDecl(0, F8, 3 << 17)], data={0: np.zeros(3 << 17)})
    assert disassemble(batch).splitlines()[0] == "batch: 1 base (1 with data, 3.0 MiB), 0 instructions"


def test_every_opcode_gets_one_line():
    batch = every_opcode_batch()
    lines = disassemble(batch).splitlines()
    listed = lines[1 + len(batch.bases) :]
    assert len(listed) == len(batch.instructions)
    for index, (line, instruction) in enumerate(zip(listed, batch.instructions)):
        assert line.split()[:2] == [str(index), instruction.op]


def test_dump_follows_the_environment(monkeypatch):
    monkeypatch.delenv("SHOAL_DUMP", raising=False)
    assert not dump_requested()
    monkeypatch.setenv("SHOAL_DUMP", "0")
    assert not dump_requested()
    monkeypatch.setenv("SHOAL_DUMP", "1")
    assert dump_requested()
    stream = io.StringIO()
    dump(golden_batch(), stream)
    assert stream.getvalue() == GOLDEN + "\n"
