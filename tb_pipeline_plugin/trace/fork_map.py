"""Run a function over a few inputs at once, in forked copies of this process.

Decoding one big trace is Python-bound: a single process uses one core
however many the machine has. Forking shares the decoded file's bytes
(copy-on-write) with the children, so each one decodes its byte range of the
same buffer without the text being sent anywhere; only the result comes
back, pickled through a pipe (`fork_map`), or in rounds of messages both
ways (`fork_talking`: the decoders then write their columns into a file the
caller maps, `shared_join.py`).

Only for a single-threaded caller (a parse worker process): forking a
process with other threads running can deadlock the child on a lock one of
them held. A child that fails for any reason yields `None` for its input,
never an exception in the caller, who then does that work itself.
"""
from __future__ import annotations

import os
import pickle
import sys
from typing import Callable, Sequence


def fork_available() -> bool:
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def fork_map(fn: Callable, inputs: Sequence, in_caller: bool = True) -> list:
    """[fn(x) for x in inputs]: inputs[0] in this process, the others each in
    a forked child, all at once. An entry is None where a child failed.
    `in_caller=False`: every input in a child, this process only waits (for
    work that may kill its process, such as reading a mapped file that
    another process can cut)."""
    mine = inputs[:1] if in_caller else inputs[:0]
    children = fork_talking(lambda x, talk: talk.send(fn(x)), inputs[len(mine):])
    try:
        first = [fn(x) for x in mine]
        results = [child.recv() for child in children]
    finally:
        clean = [child.close() for child in children]
    return first + [r if ok else None for r, ok in zip(results, clean)]


class Child:
    """A forked child of `fork_talking`, from the caller's side: messages
    both ways (pickled), then its exit. `recv` gives None once the child has
    died or sent something unreadable."""

    def __init__(self, pid: int, up: int, down: int) -> None:
        self.pid = pid
        self._up = os.fdopen(up, "rb")
        self._down = os.fdopen(down, "wb")

    def recv(self):
        try:
            return pickle.load(self._up)
        except Exception:  # the child died before or while writing
            return None

    def send(self, message) -> bool:
        try:
            pickle.dump(message, self._down, protocol=pickle.HIGHEST_PROTOCOL)
            self._down.flush()
            return True
        except OSError:  # it died
            return False

    def close(self) -> bool:
        """Its pipes closed (a child still waiting for a message reads the
        end and leaves), then its exit: True for a clean one."""
        for f in (self._down, self._up):
            try:
                f.close()
            except OSError:
                pass
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            return False
        return os.waitstatus_to_exitcode(status) == 0


class Talk:
    """The child's side of its two pipes."""

    def __init__(self, up: int, down: int) -> None:
        self._up = os.fdopen(up, "wb")
        self._down = os.fdopen(down, "rb")

    def send(self, message) -> None:
        pickle.dump(message, self._up, protocol=pickle.HIGHEST_PROTOCOL)
        self._up.flush()

    def recv(self):
        return pickle.load(self._down)  # EOFError once the caller has gone: the child then exits


def fork_talking(fn: Callable, inputs: Sequence) -> list[Child]:
    """fn(x, talk) for each input in a forked child, where `talk` sends to
    and receives from the caller, who gets one `Child` for each, in order.
    For work done in rounds that need every child's first answer (laying
    out where each writes), as `fork_map` is for one answer each. The
    caller must `close` every one."""
    children: list[Child] = []
    try:
        for x in inputs:
            children.append(_spawn_talking(fn, x, children))
    except BaseException:
        for c in children:
            c.close()
        raise
    return children


def _spawn_talking(fn: Callable, x, earlier: list[Child]) -> Child:
    up_r, up_w = os.pipe()
    down_r, down_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        status = 1
        try:
            # Earlier children's pipes: held open here, they would keep one
            # that the caller gave up on waiting for a message.
            for fd in [up_r, down_w] + [f.fileno() for c in earlier for f in (c._up, c._down)]:
                os.close(fd)
            fn(x, Talk(up_w, down_r))
            status = 0
        except BaseException:
            pass
        finally:
            os._exit(status)
    os.close(up_w)
    os.close(down_r)
    return Child(pid, up_r, down_w)
