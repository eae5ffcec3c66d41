"""`tensorboard` without some of the installed plugins, for tests and benchmarks.

    python tests/support/tb_launcher.py --without pytorch_profiler -- --logdir DIR --port N

The same start-up as the `tensorboard` command (tensorboard/main.py), with
the dynamic plugins (entry points) whose `plugin_name` is listed removed: a
machine where that package is not installed, without uninstalling it from
the shared environment.
"""
import argparse
import sys

from absl import app
from tensorboard import default, main_lib, program


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--without", action="append", default=[], help="plugin_name to leave out (repeatable)")
    ap.add_argument("tb_args", nargs=argparse.REMAINDER, help="-- then tensorboard's own arguments")
    args = ap.parse_args()
    tb_args = args.tb_args[1:] if args.tb_args[:1] == ["--"] else args.tb_args
    dynamic = [p for p in default.get_dynamic_plugins() if getattr(p, "plugin_name", None) not in args.without]
    main_lib.global_init()
    tb = program.TensorBoard(plugins=default.get_static_plugins() + dynamic)
    app.run(tb.main, argv=["tensorboard"] + tb_args, flags_parser=tb.configure)


if __name__ == "__main__":
    sys.exit(main())
