"""Stages for the error and cut-short tests (importable by the CLI as module:factory)."""
import time


def every_third_fails(x: int) -> int:
    time.sleep(0.002)
    if x % 3 == 0:
        raise ValueError(f"bad input {x}")
    return x


def slow(x: int) -> int:
    time.sleep(0.01)
    return x


def factory():
    return [("every_third_fails", every_third_fails), ("slow", slow)], range(30)
