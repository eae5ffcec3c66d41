"""What a snapshot block's Python stack says: the user's frame, the module, the phase.

Frames are innermost first. The user's frame is the innermost one that is
neither torch's, ours (the recorder's), nor Python's own library: torch's
and our frames are folded into it. The module is the chain of `forward`
frames (the user's as `file:line`, torch.nn's as its module file, e.g.
`nn.linear`), outermost first. The phase is what torch's frames say: the
optimizer (`torch/optim/`), backward (`torch/autograd/`, `Tensor.backward`),
a module's forward (`torch/nn/modules/`), else none.
"""
from __future__ import annotations

import os

NO_FRAME = "(no Python frames: autograd's backward thread or C++)"
_TORCH = ("/torch/", "\\torch\\")
_OURS = ("/tb_pipeline_plugin/", "\\tb_pipeline_plugin\\")


def is_torch(filename: str) -> bool:
    return any(t in filename for t in _TORCH) or filename.startswith("torch/")


def is_ours(filename: str) -> bool:
    return any(t in filename for t in _OURS)


def is_user(filename: str) -> bool:
    """The script's (or its project's) file: not torch's, ours, an installed package's or Python's."""
    if is_torch(filename) or is_ours(filename) or filename.startswith("<"):
        return False
    return not any(s in filename for s in ("site-packages", "dist-packages", "/lib/python3", "\\lib\\python3"))


def frame_text(frame: tuple) -> str:
    name, filename, line = frame
    return f"{os.path.basename(filename) or filename}:{line} {name}"


def user_frame(stack: tuple) -> str:
    for f in stack:
        if is_user(f[1]):
            return frame_text(f)
    return NO_FRAME if not stack else f"{frame_text(stack[0])} (no frame of the script)"


def module_path(stack: tuple) -> str:
    parts = []
    for name, filename, line in reversed(stack):
        if name != "forward":
            continue
        if is_user(filename):
            parts.append(f"{os.path.basename(filename)}:{line}")
        elif "/nn/modules/" in filename or "\\nn\\modules\\" in filename:
            stem = os.path.splitext(os.path.basename(filename))[0]
            if stem not in ("module", "container"):
                parts.append(f"nn.{stem}")
    return " › ".join(parts)


def phase(stack: tuple) -> str:
    files = [f[1] for f in stack]
    names = [f[0] for f in stack]
    if any("/torch/optim/" in f or "\\torch\\optim\\" in f for f in files):
        return "optimizer"
    if any("/torch/autograd/" in f or "\\torch\\autograd\\" in f for f in files) or (
            "backward" in names and any(f.endswith("_tensor.py") for f in files)):
        return "backward"
    if any("/nn/modules/" in f or "\\nn\\modules\\" in f for f in files):
        return "forward"
    return ""


def optimizer_state(stack: tuple) -> bool:
    """Allocated where torch's optimizers create their state (`_init_group`)."""
    return any(f[0] == "_init_group" for f in stack)
