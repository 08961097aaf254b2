"""``docs/opcodes.md``, generated from the opcode table.

``python -m shoal.bytecode.opcode_docs --write`` rewrites the file; ``--check`` exits with
status 1 if it is not current; no argument prints the text. ``tests/test_opcode_table.py``
checks that the file in the repository is current.
"""

from __future__ import annotations

import sys
from pathlib import Path

from shoal.bytecode.opcodes import OPCODES, GroupOp, Kind, OpSpec

DOCS_PATH = Path(__file__).resolve().parent.parent.parent / "docs" / "opcodes.md"

_HEADER = """# Opcodes

Generated from the opcode table (`shoal/bytecode/opcodes.py`) by
`python -m shoal.bytecode.opcode_docs --write`; do not edit by hand.

Columns: the wire code; the kind; inputs (`-1`: any number) and outputs; **fuses**: the
operation may join a fused kernel, computed element by element (a reduction: accumulated
element by element); **combine**: for reductions and scans, the binary ufunc that combines two
partial results; **identity**: the value an accumulation starts from (`-`: none, the first
element starts it); the attributes it accepts (required ones in bold).
"""


def _cell(value: object) -> str:
    return "-" if value is None else str(value)


def _attrs(entry: OpSpec) -> str:
    names = [f"**{name}**" if name in entry.required else name for name in sorted(entry.attrs)]
    return ", ".join(names) or "-"


def render() -> str:
    """The whole text of ``docs/opcodes.md``."""
    lines = [_HEADER]
    for kind in Kind:
        entries = [entry for entry in OPCODES if entry.kind is kind]
        if not entries:
            continue
        lines += [f"## {kind.value}", "", "| code | name | in | out | fuses | combine | identity | attributes |", "|---:|---|---:|---:|---|---|---|---|"]
        for entry in sorted(entries, key=lambda e: e.code):
            fuses = "yes" if entry.fuses else ""
            row = [str(entry.code), f"`{entry.name}`", str(entry.arity), str(entry.nout), fuses, _cell(entry.combine), _cell(entry.identity), _attrs(entry)]
            lines.append("| " + " | ".join(row) + " |")
        lines.append("")
    lines += ["## Groups", "", "Sets of names derived from the columns (`GroupOp`):", ""]
    for name, members in sorted(vars(GroupOp).items()):
        if isinstance(members, frozenset):
            lines.append(f"- `{name}` ({len(members)}): {', '.join(f'`{m}`' for m in sorted(members))}")
    return "\n".join(lines) + "\n"


def main(arguments: list[str]) -> int:
    """Print, write (``--write``) or check (``--check``) the generated document."""
    text = render()
    if arguments == ["--write"]:
        DOCS_PATH.write_text(text, encoding="utf-8")
        return 0
    if arguments == ["--check"]:
        current = DOCS_PATH.read_text(encoding="utf-8") if DOCS_PATH.exists() else ""
        if current != text:
            sys.stderr.write(f"{DOCS_PATH} is not current: run python -m shoal.bytecode.opcode_docs --write\n")
            return 1
        return 0
    if arguments:
        sys.stderr.write("usage: python -m shoal.bytecode.opcode_docs [--write | --check]\n")
        return 2
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
