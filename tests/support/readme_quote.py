"""The README quotes the demo's explanation sentence, the one
docs/screenshots/overview.png shows: tests/e2e/test_e2e_demo.py writes both from
the same demo run (the sentence also to docs/screenshots/overview_sentence.txt),
and tests/package/test_readme.py checks that the README quotes what that file says,
so the quote and the picture cannot drift apart between two demo runs."""
from __future__ import annotations

import contextlib
import fcntl
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
SENTENCE_FILE = REPO / "docs" / "screenshots" / "overview_sentence.txt"
# Invisible on GitHub; they delimit the quote the demo test rewrites.
START = "<!-- the demo's sentence, as in docs/screenshots/overview.png (tests/e2e/test_e2e_demo.py) -->"
END = "<!-- end of the demo's sentence -->"
# Held while the two files are written, and while they are read together: the demo test and the README test may
# run at once on the two workers of `make test-py`.
LOCK = REPO / ".cache" / "readme_quote.lock"
_QUOTE = re.compile(re.escape(START) + r'\s*"(.*?)"\s*' + re.escape(END), re.S)


def quoted(readme: str) -> str | None:
    """The sentence the README quotes, with its line breaks undone."""
    m = _QUOTE.search(readme)
    return " ".join(m[1].split()) if m else None


@contextlib.contextmanager
def _locked():
    LOCK.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def write(sentence: str) -> None:
    """The README's quote and the sentence file, from the sentence the overview shows."""
    with _locked():
        text = README.read_text()
        assert _QUOTE.search(text), "README lost the markers of the demo's sentence"
        SENTENCE_FILE.write_text(sentence.strip() + "\n")
        README.write_text(_QUOTE.sub(lambda _: f'{START}\n  "{_wrap(sentence.strip())}"\n  {END}', text, count=1))


def read_both() -> tuple[str, str]:
    """(the README's text, the sentence file's), read now and together (never between the two writes of `write`)."""
    with _locked():
        return README.read_text(), SENTENCE_FILE.read_text()


def _wrap(sentence: str, width: int = 74) -> str:
    """Wrapped like the README's other lines (Markdown joins them again)."""
    lines, line = [], ""
    for word in sentence.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    lines.append(line)
    return "\n  ".join(lines)
