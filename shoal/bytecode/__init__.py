"""Shoal's vector bytecode: one opcode table, instructions over views, self-contained batches."""

from shoal.bytecode.ir import (
    BaseDecl,
    Batch,
    Const,
    Instruction,
    Operand,
    View,
    make_attrs,
)
from shoal.bytecode.opcodes import BY_CODE, BY_NAME, OPCODES, Kind, OpSpec, spec, ufunc_opcode

__all__ = [
    "BY_CODE",
    "BY_NAME",
    "OPCODES",
    "BaseDecl",
    "Batch",
    "Const",
    "Instruction",
    "Kind",
    "OpSpec",
    "Operand",
    "View",
    "make_attrs",
    "spec",
    "ufunc_opcode",
]
