"""Which files of our package one warm request passes through, in call order.

    python tests/support/route_hops.py LOGDIR "/diff/operators?baseline=a&experimental=b" ...

Each URL is asked until it stops answering 409 (loaded), then once more under
`sys.setprofile`; the files entered during that last request are listed. A
measure of how many layers a route crosses (route -> impl -> provider).
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # tests/, where conftest is


def main() -> int:
    sys.path.insert(0, str(HERE))
    from werkzeug.test import Client

    from conftest import PLUGIN_PREFIX, build_tb_app

    # What users run: the tests' decoding of every answer with its contract type is not part of a request.
    os.environ.pop("TB_PIPELINE_VALIDATE_RESPONSES", None)

    app, plugin = build_tb_app(sys.argv[1])
    client = Client(app)
    pkg = str(HERE.parent / "tb_pipeline_plugin")
    for url in sys.argv[2:]:
        while client.get(PLUGIN_PREFIX + url).status_code == 409:
            time.sleep(0.1)
        files: list[str] = []

        def profile(frame, event, _arg):
            name = frame.f_code.co_filename
            if event == "call" and name.startswith(pkg) and name not in files:
                files.append(name)

        sys.setprofile(profile)
        status = client.get(PLUGIN_PREFIX + url).status_code
        sys.setprofile(None)
        print(f"{url} -> {status}: {len(files)} files")
        for name in files:
            print("   ", os.path.relpath(name, pkg))
    plugin.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
