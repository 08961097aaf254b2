"""Child processes that take Ctrl-C as at a terminal."""

import signal


def ctrl_c_as_at_a_terminal() -> None:
    """``preexec_fn`` of a child that a test sends SIGINT: SIGINT's default action, which Python
    then handles (a test run started in the background inherits SIGINT ignored, and so would the
    child)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
