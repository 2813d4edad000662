"""Ctrl-C while a command runs: the open DuckDB connections are interrupted, and the command
says so in one line (exit status 130)."""

from __future__ import annotations

import signal
import socket
import threading
from typing import Any

import duckdb


class InterruptWatch:
    """Ctrl-C (SIGINT) while main runs. A running DuckDB statement holds the main thread in C++,
    where Python's handler cannot run, so the signal also wakes a thread (signal.set_wakeup_fd)
    that interrupts the open connections; DuckDB then raises its own InterruptException (or a
    RuntimeError), and `seen` says that it was Ctrl-C. Outside a statement Python's handler
    raises KeyboardInterrupt as usual, once. Only in the main thread (signals go there); the
    previous handler and wakeup fd are back afterwards."""

    def __init__(self) -> None:
        self.seen = False
        self.connections: list[duckdb.DuckDBPyConnection] = []
        self._previous: Any = None

    def _handle(self, signum: int, frame: Any) -> None:
        if not self.seen:
            self.seen = True
            raise KeyboardInterrupt

    def _wake(self, reader: socket.socket) -> None:
        while True:
            try:
                data = reader.recv(64)
            except OSError:
                return
            if not data:  # closed by __exit__
                return
            if signal.SIGINT in data:
                for con in list(self.connections):
                    try:
                        con.interrupt()
                    except duckdb.Error:  # closed meanwhile
                        pass

    def __enter__(self) -> InterruptWatch:
        global _WATCH
        _WATCH = self
        if threading.current_thread() is threading.main_thread():
            self._reader, self._writer = socket.socketpair()
            self._writer.setblocking(False)
            self._previous = signal.signal(signal.SIGINT, self._handle)
            self._previous_fd = signal.set_wakeup_fd(self._writer.fileno(), warn_on_full_buffer=False)
            self._thread = threading.Thread(target=self._wake, args=(self._reader,), daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        global _WATCH
        _WATCH = None
        self.connections.clear()  # nothing of DuckDB's may outlive main (nanobind reports leaks)
        if self._previous is not None:
            signal.set_wakeup_fd(self._previous_fd)
            signal.signal(signal.SIGINT, self._previous)
            self._writer.close()  # ends the waking thread
            self._thread.join(timeout=5)
            self._reader.close()


_WATCH: InterruptWatch | None = None


def watched(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """`con`, interrupted by Ctrl-C while main runs."""
    if _WATCH is not None:
        _WATCH.connections.append(con)
    return con
