"""Shoal's vector bytecode: one opcode table, instructions over views, self-contained batches."""

from shoal.bytecode.codec import DEFAULT_LIMITS, WireLimits
from shoal.bytecode.disasm import disassemble
from shoal.bytecode.errors import BytecodeError
from shoal.bytecode.ir import (
    BaseDecl,
    Batch,
    Const,
    Instruction,
    Operand,
    View,
    contiguous_strides,
    make_attrs,
    reordered,
)
from shoal.bytecode.opcodes import (
    BY_CODE,
    BY_NAME,
    OPCODES,
    GroupOp,
    Kind,
    OpSpec,
    spec,
    ufunc_opcode,
)
from shoal.bytecode.verify import VerifyLimits, verify
from shoal.bytecode.wire import dumps, loads

__all__ = [
    "BY_CODE",
    "BY_NAME",
    "DEFAULT_LIMITS",
    "OPCODES",
    "BaseDecl",
    "Batch",
    "BytecodeError",
    "Const",
    "GroupOp",
    "Instruction",
    "Kind",
    "OpSpec",
    "Operand",
    "VerifyLimits",
    "View",
    "WireLimits",
    "contiguous_strides",
    "disassemble",
    "dumps",
    "loads",
    "make_attrs",
    "reordered",
    "spec",
    "ufunc_opcode",
    "verify",
]
